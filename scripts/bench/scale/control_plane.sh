#!/usr/bin/env bash
# The control plane at N simulated ranks (issue 37): runs scale_control_plane for each scenario
# at each N, then prints a table by N and the growth exponent fitted to wall time, store
# requests and bytes (least squares of log(value) on log(N)). Not a test; numbers only.
#
#   scripts/bench/scale/control_plane.sh                      # every scenario, default Ns
#   SCENARIOS="gather rendezvous" NS="1024 4096 16384" scripts/bench/scale/control_plane.sh
#   BIN=/other/build/scripts/bench/scale_control_plane ...    # another build (a before/after)
#
# Every rank is a thread with its own store connection; ranks are spread over processes of at
# most 2,048 threads, and where rank 0 serves the store (rendezvous, gloo-init, new-group,
# monitored-barrier) it runs alone in its process, which then holds one connection per rank
# (the 20,000 descriptors of this machine bound N near 19,000). A rank of a process group has 3
# threads (its own, its store connection's reader, the flight recorder's dump watcher), so
# pid_max (32,768 here) bounds monitored-barrier and dump-trigger near 10,000 ranks; new-group
# runs one rank per process. JSON lines go to OUT.
set -uo pipefail
cd "$(dirname "$0")/../../.."
BIN="${BIN:-build/scripts/bench/scale_control_plane}"
OUT="${OUT:-/tmp/collie-scale-control-plane.jsonl}"
SCENARIOS="${SCENARIOS:-keys-allgather gather rendezvous monitored-barrier new-group dump-trigger gloo-init}"
[ -x "$BIN" ] || { echo "control_plane.sh: $BIN not built (cmake --build build --target scale_control_plane)" >&2; exit 2; }
default_ns() {
  case "$1" in
    keys-allgather) echo "256 512 1024 2048" ;;
    gloo-init) echo "16 32 64 128" ;;
    new-group) echo "128 256 512" ;;
    monitored-barrier|dump-trigger) echo "1024 2048 4096 8192" ;;
    *) echo "1024 2048 4096 8192 16384" ;;
  esac
}
: > "$OUT"
for s in $SCENARIOS; do
  for n in ${NS:-$(default_ns "$s")}; do
    procs=()
    # new_group numbers groups per process (as torch does), so ranks sharing a process would
    # number theirs differently: one rank per process there.
    [ "$s" = new-group ] && procs=(--procs $((n - 1)))
    line=$(timeout "${RUN_TIMEOUT:-900}" "$BIN" --scenario "$s" --ranks "$n" "${procs[@]}" --timeout-s 600 2>/tmp/collie-scale-err.txt)
    rc=$?
    if [ $rc -ne 0 ] || [ -z "$line" ]; then
      echo "control_plane.sh: $s at N=$n failed (exit $rc): $(head -c 300 /tmp/collie-scale-err.txt)" >&2
      continue
    fi
    echo "$line" | tee -a "$OUT"
  done
done
python3 - "$OUT" <<'PY'
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def fit(pts):
    pts = [(math.log(n), math.log(v)) for n, v in pts if v > 0]
    if len(pts) < 2: return float('nan')
    mx = sum(x for x, _ in pts) / len(pts); my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx else float('nan')
print()
print(f"{'scenario':18} {'N':>6} {'wall s':>8} {'op s':>7} {'rank p50 ms':>11} {'p99 ms':>8} {'req/rank':>8} "
      f"{'MB in':>8} {'MB out':>9} {'srv MiB':>8} {'fds':>6}")
by = {}
for r in rows:
    by.setdefault(r['scenario'], []).append(r)
    print(f"{r['scenario']:18} {r['ranks']:>6} {r['wall_s']:>8.3f} {r.get('op_s', 0):>7.3f} {r['rank_p50_ms']:>11.2f} "
          f"{r['rank_p99_ms']:>8.2f} {r['requests_per_rank']:>8.2f} {r['bytes_in']/1e6:>8.2f} "
          f"{r['bytes_out']/1e6:>9.2f} {r['server_rss_mib']:>8.1f} {r['server_peak_conns']:>6}")
print()
print("growth exponent (value ~ N^k, least squares over the Ns above):")
print(f"{'scenario':18} {'wall':>6} {'op':>6} {'requests':>9} {'bytes out':>10}")
for s, rs in by.items():
    print(f"{s:18} {fit([(r['ranks'], r['wall_s']) for r in rs]):>6.2f} "
          f"{fit([(r['ranks'], r.get('op_s', 0)) for r in rs]):>6.2f} "
          f"{fit([(r['ranks'], r['requests']) for r in rs]):>9.2f} "
          f"{fit([(r['ranks'], r['bytes_out']) for r in rs]):>10.2f}")
PY
