#!/usr/bin/env bash
# collie accept over N simulated hosts (issue 39): runs scale_probes (probes_bench.cpp: real probe
# code and control plane, ranks as threads, a simulated wire; see the top of that file) for each
# configuration at each N, then prints a table by N and the growth exponent of rank 0's memory
# above its fixed cost, of the wall time, of the store's bytes and of the text report's length
# (least squares of log(value) on log(N)). Not a test; numbers only.
#
#   scripts/bench/scale/probes.sh                                  # every configuration
#   CONFIGS="quick1 quick8" scripts/bench/scale/probes.sh          # some of them
#   HOSTS_quick1="256 1024" scripts/bench/scale/probes.sh          # other Ns for one of them
#   BIN=/other/build/scripts/bench/scale_probes scripts/bench/scale/probes.sh   # another build
#
# Configurations:
#   quick1  pairwise (quick), env, stragglers; 1 rank per host; a slow host and a slow link
#   quick8  the same with 8 ranks per host (a GPU node: N hosts = 8N ranks)
#   conn1   connectivity (every pair of ranks: N - 1 rounds); 1 rank per host; one dead host
# A run is "named" when the text report names the slow (or dead) host and the slow link and
# nothing else; "line" is the report line that first names the host. JSON lines go to OUT.
set -uo pipefail
cd "$(dirname "$0")/../../.."
BIN="${BIN:-build/scripts/bench/scale_probes}"
OUT="${OUT:-/tmp/collie-scale-probes.jsonl}"
WORK="${WORK:-/tmp/collie-scale-probes}"
CONFIGS="${CONFIGS:-quick1 quick8 conn1}"
[ -x "$BIN" ] || { echo "probes.sh: $BIN not built (cmake --build build --target scale_probes)" >&2; exit 2; }
args_of() {
  case "$1" in
    quick1) echo "--ranks-per-host 1" ;;
    quick8) echo "--ranks-per-host 8" ;;
    conn1) echo "--ranks-per-host 1 --checks connectivity --dead-host" ;;
  esac
}
hosts_of() {
  local v="HOSTS_$1"
  if [ -n "${!v:-}" ]; then echo "${!v}"; return; fi
  case "$1" in
    quick1) echo "2 256 512 1024 2048 4096" ;;
    quick8) echo "2 128 256 512 1024" ;;
    conn1) echo "2 64 128 256 512" ;;
  esac
}
: > "$OUT"
for c in $CONFIGS; do
  for n in $(hosts_of "$c"); do
    # shellcheck disable=SC2046
    line=$(timeout "${RUN_TIMEOUT:-1800}" "$BIN" --hosts "$n" $(args_of "$c") --out "$WORK/$c-$n" \
      2>"$WORK.err")
    rc=$?
    if [ -z "$line" ]; then
      echo "probes.sh: $c at $n hosts failed (exit $rc): $(tail -c 300 "$WORK.err")" >&2
      continue
    fi
    echo "{\"config\": \"$c\", \"run\": $line}" | tee -a "$OUT"
  done
done
python3 - "$OUT" <<'PY'
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def fit(pts):
    pts = [(math.log(n), math.log(v)) for n, v in pts if v > 0 and n > 0]
    if len(pts) < 2: return float('nan')
    mx = sum(x for x, _ in pts) / len(pts); my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx else float('nan')
print()
print(f"{'config':7} {'hosts':>5} {'ranks':>6} {'wall s':>7} {'rank0 MiB':>9} {'rank1 MiB':>9} "
      f"{'req/rank':>8} {'MB in':>8} {'MB out':>8} {'lines':>6} {'line':>5} {'JSON MB':>8} "
      f"{'HTML MB':>8} {'named':>5}")
by = {}
for r in rows:
    c, x = r['config'], r['run']
    rep = x.get('report', {})
    link_ok = rep.get('bad_link_line', 0) > 0 or c == 'conn1' or x['hosts'] < 8
    named = x['hosts'] < 8 or (rep.get('bad_host_line', 0) > 0 and link_ok and rep.get('other_findings', 1) == 0)
    x['named'] = named
    by.setdefault(c, []).append(x)
    print(f"{c:7} {x['hosts']:>5} {x['ranks']:>6} {x['wall_s']:>7.1f} {x['rank0_rss_mib']:>9.1f} "
          f"{x['rank1_rss_mib']:>9.1f} {x['store_requests'] / x['ranks']:>8.1f} "
          f"{x['store_bytes_in'] / 1e6:>8.2f} {x['store_bytes_out'] / 1e6:>8.2f} "
          f"{rep.get('text_lines', 0):>6} {rep.get('bad_host_line', 0):>5} "
          f"{rep.get('json_bytes', 0) / 1e6:>8.2f} {rep.get('html_bytes', 0) / 1e6:>8.2f} "
          f"{'yes' if named else 'NO':>5}")
print()
print("growth exponent (value ~ hosts^k over the runs above with more than 2 hosts; rank 0's")
print("memory above its fixed cost, the 2-host run's):")
print(f"{'config':7} {'rank0 mem':>9} {'wall':>6} {'MB in':>6} {'MB out':>6} {'lines':>6}")
for c, xs in by.items():
    base = min((x['rank0_rss_mib'] for x in xs if x['hosts'] <= 2), default=0)
    big = [x for x in xs if x['hosts'] > 2]
    print(f"{c:7} {fit([(x['hosts'], x['rank0_rss_mib'] - base) for x in big]):>9.2f} "
          f"{fit([(x['hosts'], x['wall_s']) for x in big]):>6.2f} "
          f"{fit([(x['hosts'], x['store_bytes_in']) for x in big]):>6.2f} "
          f"{fit([(x['hosts'], x['store_bytes_out']) for x in big]):>6.2f} "
          f"{fit([(x['hosts'], x['report'].get('text_lines', 0)) for x in big]):>6.2f}")
PY
