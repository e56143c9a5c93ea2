# Sourced by shell tests. free_ports N: prints a port P such that P .. P+N-1 can all be bound on
# 127.0.0.1 now, chosen below the kernel's ephemeral range (ip_local_port_range), so that the
# outgoing connections of this and other tests (stores, Gloo, fuzzers) are not handed P+1 between
# the choice and the job's own bind, as a port from bind(0) plus one could be. For flags that
# take a base port and add the local rank (--debug-port, COLLIE_DEBUG_PORT).
free_ports() {
  python3 - "${1:-1}" <<'PY'
import random, socket, sys
n = int(sys.argv[1])
try:
    lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except OSError:
    lo = 32768
for _ in range(200):
    p = random.randrange(10000, max(10001, lo - n))
    held = []
    try:
        for q in range(p, p + n):
            s = socket.socket()
            held.append(s)
            s.bind(("127.0.0.1", q))
    except OSError:
        continue
    finally:
        for s in held:
            s.close()
    print(p)
    sys.exit(0)
sys.exit("free_ports: no free run of %d ports below %d" % (n, lo))
PY
}
