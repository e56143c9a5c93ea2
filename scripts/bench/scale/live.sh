#!/usr/bin/env bash
# Live status at N simulated ranks (issue 39): runs scale_live (N fake debug servers on
# 127.1.x.y addresses, served event-driven by processes of one thread each, answering the
# live-status tree as ranks do) for each N, queried by a real `collie analyze --live`, then prints
# a table by N and the growth exponent fitted to wall time, querier threads, descriptors and
# memory (least squares of log(value) on log(N)). Not a test; numbers only.
#
#   scripts/bench/scale/live.sh                                 # lagging-host, default Ns
#   NS="1024 4096 16384" PATTERN=frozen-rank scripts/bench/scale/live.sh
#   COLLIE=/other/build/src/cli/collie NS="256 1024" scripts/bench/scale/live.sh   # a before
#
# The fake servers also answer /v1/status and /v1/flight_recorder, so a collie from before the
# tree (which fetches every rank's) can be measured by the same command. JSON lines go to OUT.
set -uo pipefail
cd "$(dirname "$0")/../../.."
BIN="${BIN:-build/scripts/bench/scale_live}"
COLLIE="${COLLIE:-build/src/cli/collie}"
OUT="${OUT:-/tmp/collie-scale-live.jsonl}"
PATTERN="${PATTERN:-lagging-host}"
NS="${NS:-256 1024 4096 16384}"
# The query's --timeout in ms; 0 (default): not passed, collie's default (2 s per level).
LEVEL_MS="${LEVEL_MS:-0}"
# Ranks per server process (one thread each): P = ceil(N / PER_PROC) processes. LAYOUT=interleaved
# (default): rank r is served by process r mod P, so a node's children answer on other threads,
# as ranks on their own CPUs do; LAYOUT=blocks: process p serves a contiguous block, a whole
# subtree answered one rank after another (how it was measured before issue 39's interleaving).
PER_PROC="${PER_PROC:-1024}"
LAYOUT="${LAYOUT:-interleaved}"
[ -x "$BIN" ] || { echo "live.sh: $BIN not built (cmake --build build --target scale_live)" >&2; exit 2; }
[ -x "$COLLIE" ] || { echo "live.sh: $COLLIE not built (cmake --build build --target collie)" >&2; exit 2; }
: > "$OUT"
for n in $NS; do
  line=$(timeout "${RUN_TIMEOUT:-900}" "$BIN" --ranks "$n" --collie "$COLLIE" --pattern "$PATTERN" \
           --level-ms "$LEVEL_MS" --per-proc "$PER_PROC" --layout "$LAYOUT" ${EXTRA:-} 2>/tmp/collie-scale-live-err.txt)
  rc=$?
  if [ $rc -ne 0 ] || [ -z "$line" ]; then
    echo "live.sh: N=$n failed (exit $rc): $(head -c 300 /tmp/collie-scale-live-err.txt)" >&2
    continue
  fi
  echo "$line" | tee -a "$OUT"
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
print(f"{'N':>6} {'exit':>4} {'wall s':>7} {'srv cpu':>7} {'gone':>5} {'q thr':>5} {'q fds':>6} {'q MiB':>6} {'q cpu s':>7} "
      f"{'srv fds':>7} {'srv MiB':>7} {'answered':>8} {'levels':>6} {'reqs':>6} {'store req':>9}  culprits")
for r in rows:
    print(f"{r['ranks']:>6} {r['exit']:>4} {r['wall_s']:>7.3f} {r['server_cpu_s']:>7.2f} "
          f"{r.get('abandoned_requests', 0):>5} {r['querier_threads']:>5} "
          f"{r['querier_fds']:>6} {r['querier_rss_mib']:>6.1f} {r['querier_cpu_s']:>7.2f} "
          f"{r['server_fds']:>7} {r['server_rss_mib']:>7.1f} {str(r.get('answered', '-')):>8} "
          f"{str(r.get('levels', '-')):>6} {str(r.get('status_requests', '-')):>6} "
          f"{r['store_requests']:>9}  {str(r.get('culprits', r.get('error', '')))[:60]}")
ok = [r for r in rows if r['exit'] in (0, 1)]
print()
print("growth exponent (value ~ N^k, least squares over the Ns above):")
for key in ('wall_s', 'querier_threads', 'querier_fds', 'querier_rss_mib', 'querier_cpu_s'):
    print(f"  {key:16} {fit([(r['ranks'], r[key]) for r in ok]):6.2f}")
PY
