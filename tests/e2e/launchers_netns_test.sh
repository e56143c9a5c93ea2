#!/usr/bin/env bash
# collie across "hosts" (network namespaces) with nothing set but what launchers set.
#   usage: launchers_netns_test.sh COLLIE_BINARY SCENARIO [MPIRUN]
#   SCENARIO: env   ranks get only RANK, WORLD_SIZE, MASTER_ADDR=host0 (a name), MASTER_PORT:
#                   perf with data checks passes across the hosts
#             tcp   the same with COLLIE_INIT_METHOD=tcp://host0:PORT and no MASTER_*
#             mpi   one Open MPI job across the hosts with the default (gloo) backend and no
#                   rendezvous variables (needs MPIRUN, given when the MPI backend is built)
#             accept  the default path of cluster acceptance: the shipped docs/accept-spec.yaml,
#                   unmodified (its pairwise check included), under what torchrun sets (RANK,
#                   WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=host0, MASTER_PORT) and
#                   nothing else, not even a log level: every rank exits 0, ACCEPTED, 3 hosts
# Hosts: host0 and host1 have a stock Debian/Ubuntu /etc/hosts (their own name -> 127.0.1.1, the
# others' names -> their addresses); host2's own name does not resolve at all. `ip netns exec`
# bind-mounts /etc/netns/<ns>/hosts over /etc/hosts; `unshare --uts` gives each its hostname.
# No address override (COLLIE_GLOO_HOST, GLOO_SOCKET_IFNAME, COLLIE_MPI_STORE_HOST) is set.
# Exit: 0 pass, 1 fail, 77 skipped (no root / no namespaces; the reason is printed; under CI=true
# these fail instead, tests/support/skip.sh).
set -u
COLLIE=${1:?collie binary}
SCENARIO=${2:?scenario}
MPIRUN=${3:-}
HOSTS=3
PER_HOST=2
WORLD=$((HOSTS * PER_HOST))
TAG="c12l$$"
BR="${TAG}br"
NET=10.78.$(($$ % 200 + 20))
WORK=$(mktemp -d /tmp/collie_launchers_netns.XXXXXX)
PIDS=()

fail() { echo "FAIL: $*"; exit 1; }
source "$(dirname "$0")/../support/skip.sh"
cleanup() {
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for ((h = 0; h < HOSTS; h++)); do
    ip netns pids "${TAG}h$h" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
    ip netns del "${TAG}h$h" 2>/dev/null
    rm -rf "/etc/netns/${TAG}h$h"
  done
  ip netns del "$BR" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
trap "exit 1" INT TERM

if [ "$SCENARIO" = mpi ] && { [ -z "$MPIRUN" ] || [ ! -x "$MPIRUN" ]; }; then
  skip "this build has no MPI backend (no mpirun given)"
fi
[ "$(id -u)" = 0 ] || skip "needs root (CAP_NET_ADMIN) to create network namespaces"
for t in ip unshare hostname timeout; do command -v $t >/dev/null || skip "'$t' is not installed"; done
ip netns add "$BR" 2>/dev/null || skip "cannot create network namespaces here (ip netns add failed)"

ip -n "$BR" link set lo up
ip -n "$BR" link add name xb type bridge || fail "cannot create a bridge"
ip -n "$BR" link set xb up
for ((h = 0; h < HOSTS; h++)); do
  ns="${TAG}h$h"
  ip netns add "$ns" || fail "cannot create namespace $ns"
  ip -n "$ns" link set lo up
  ip -n "$BR" link add name "v$h" type veth peer name eth0 netns "$ns" || fail "no veth"
  ip -n "$BR" link set "v$h" master xb up
  ip -n "$ns" addr add "$NET.$((h + 1))/24" dev eth0
  ip -n "$ns" link set eth0 up
  mkdir -p "/etc/netns/$ns"
  {
    echo "127.0.0.1 localhost"
    [ $h -lt 2 ] && echo "127.0.1.1 host$h"  # stock Debian: own name -> 127.0.1.1
    for ((o = 0; o < HOSTS; o++)); do [ $o != $h ] && echo "$NET.$((o + 1)) host$o"; done
    echo "::1 localhost ip6-localhost ip6-loopback"
  } >"/etc/netns/$ns/hosts"
done

# in_host H CMD...: CMD inside host H under its own host name.
in_host() {
  local h=$1
  shift
  ip netns exec "${TAG}h$h" unshare --uts sh -c 'hostname "$0" && exec "$@"' "host$h" "$@"
}

# The setup itself must show the trap: host0's own name is loopback there, host2's is unknown.
in_host 0 getent hosts host0 | grep -q '^127.0.1.1' || fail "host0 does not map its name to 127.0.1.1"
in_host 2 getent hosts host2 >/dev/null && fail "host2's own name resolves"

PERF=(perf -b 1K -e 256K -f 4 -n 3 -w 1 -c 1 -T 20 all_reduce all_gather)
CMD=("${PERF[@]}")

# run_ranks NAME ENV...: the WORLD ranks of `collie CMD...` (perf unless CMD says otherwise),
# rank r on host r / PER_HOST, with only PATH, RANK, WORLD_SIZE and ENV in their environment.
run_ranks() {
  local name=$1
  shift
  local pids=()
  for ((r = 0; r < WORLD; r++)); do
    local h=$((r / PER_HOST))
    in_host $h env -i PATH="$PATH" RANK=$r WORLD_SIZE=$WORLD "${@//@LOCAL_RANK@/$((r % PER_HOST))}" \
      timeout -k 5 120 "$COLLIE" "${CMD[@]}" >"$WORK/$name.$r.log" 2>&1 &
    pids+=($!)
    PIDS+=($!)
  done
  RCS=()
  for p in "${pids[@]}"; do
    wait "$p"
    RCS+=($?)
  done
}

all_exited_0() {  # all_exited_0 NAME: every rank of the last run_ranks exited 0
  local name=$1
  for ((r = 0; r < WORLD; r++)); do
    if [ "${RCS[$r]}" != 0 ]; then
      echo "----- $name rank $r (exit ${RCS[$r]}) -----"
      cat "$WORK/$name.$r.log"
      fail "$name: rank $r exited ${RCS[$r]}"
    fi
  done
}

check_ranks() {
  local name=$1
  all_exited_0 "$name"
  grep -q "backend gloo world size $WORLD" "$WORK/$name.0.log" || { cat "$WORK/$name.0.log"; fail "$name: no table"; }
  # Every rank bound a real address of its own host, never loopback.
  for ((r = 0; r < WORLD; r++)); do
    local h=$((r / PER_HOST))
    grep -q "gloo: binding $NET.$((h + 1))" "$WORK/$name.$r.log" ||
      { cat "$WORK/$name.$r.log"; fail "$name: rank $r did not bind $NET.$((h + 1))"; }
  done
  echo "--- $name: rank 0 ---"
  grep -E "gloo: binding|store: serving|rendezvous" "$WORK/$name.0.log"
  echo "--- $name: rank $((WORLD - 1)) ---"
  grep -E "gloo: binding|rendezvous" "$WORK/$name.$((WORLD - 1)).log"
}

start=$(date +%s)
port=$((20000 + RANDOM % 20000))
case "$SCENARIO" in
  env)
    run_ranks env MASTER_ADDR=host0 MASTER_PORT=$port COLLIE_LOG_LEVEL=INFO
    check_ranks env
    ;;
  tcp)
    run_ranks tcp COLLIE_INIT_METHOD=tcp://host0:$port COLLIE_LOG_LEVEL=INFO
    check_ranks tcp
    ;;
  accept)
    SPEC="$(dirname "$0")/../../docs/accept-spec.yaml"
    [ -f "$SPEC" ] || fail "no shipped spec at $SPEC"
    CMD=(accept --spec "$SPEC" -J "$WORK/accept.json")
    run_ranks accept MASTER_ADDR=host0 MASTER_PORT=$port LOCAL_RANK=@LOCAL_RANK@ \
      LOCAL_WORLD_SIZE=$PER_HOST
    cat "$WORK/accept.0.log"
    all_exited_0 accept
    grep -q "^ACCEPTED: all 5 checks passed" "$WORK/accept.0.log" || fail "accept: no ACCEPTED line"
    grep -q "$WORLD ranks on $HOSTS hosts" "$WORK/accept.0.log" ||
      fail "accept: the report does not see $HOSTS hosts"
    python3 - "$WORK/accept.json" <<'PY' || fail "accept: JSON report"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["passed"] is True and j["verdict"] == "OK", (j["passed"], j["verdict"])
names = [c["name"] for c in j["checks"]]
assert len(names) == 5 and any(n.startswith("pairwise") for n in names), names
PY
    ;;
  mpi)
    cat >"$WORK/agent.sh" <<AGENT
#!/bin/sh
n=\${1##*.}
shift
h=\$((n - 1))
exec ip netns exec "${TAG}h\$h" unshare --uts sh -c 'hostname "\$0" && exec sh -c "\$1"' "host\$h" "\$*"
AGENT
    chmod +x "$WORK/agent.sh"
    hostlist=""
    for ((h = 0; h < HOSTS; h++)); do hostlist+="${hostlist:+,}$NET.$((h + 1)):$PER_HOST"; done
    timeout -k 5 120 ip netns exec "${TAG}h0" unshare --uts sh -c 'hostname host0 && exec "$@"' sh \
      "$MPIRUN" --allow-run-as-root --oversubscribe -np $WORLD --host "$hostlist" \
      --mca plm_rsh_agent "$WORK/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
      --mca btl self,vader,tcp --mca mpi_yield_when_idle 1 -x COLLIE_LOG_LEVEL=INFO \
      "$COLLIE" "${PERF[@]}" >"$WORK/mpi.log" 2>&1
    rc=$?
    [ $rc = 0 ] || { cat "$WORK/mpi.log"; fail "mpirun across the hosts: exit $rc"; }
    grep -q "backend gloo world size $WORLD" "$WORK/mpi.log" || { cat "$WORK/mpi.log"; fail "no table"; }
    for ((h = 0; h < HOSTS; h++)); do
      [ "$(grep -c "gloo: binding $NET.$((h + 1))" "$WORK/mpi.log")" = $PER_HOST ] ||
        { cat "$WORK/mpi.log"; fail "the ranks on host$h did not bind $NET.$((h + 1))"; }
    done
    grep -E "gloo: binding|self rendezvous" "$WORK/mpi.log" | head -4
    ;;
  *) fail "unknown scenario '$SCENARIO'" ;;
esac
echo "PASS: $SCENARIO in $(($(date +%s) - start)) s"
