#!/usr/bin/env bash
# Wall time and peak memory of `collie analyze DIR` over the dumps of N ranks, by N, with the
# fitted growth exponent, and whether the same culprit is named at every N.
#   scripts/bench/scale/analyze_scale.sh [N ...]          (default: 256 1024 4096 16384)
# Environment:
#   ENTRIES=2000        ops in each rank's ring (a real recorder's default)
#   HANG=frozen-rank    none | frozen-rank | frozen-host | never-joined | opposite-order
#   FORMAT=json         json | torch (PyTorch's pickles)
#   BUILD=build         the build whose collie and analyze_gen run (COLLIE=PATH: another collie)
#   WORK=/tmp/collie_analyze_scale   dumps are generated once per (N, ENTRIES, HANG, FORMAT) and
#                                    kept there (16,384 x 2,000 JSON dumps: ~20 GB); CLEAN=1
#                                    removes each N's dumps after its runs
#   BEFORE=PATH         another build's collie binary, run on the same dumps in the same rounds
#                       (the dumps then list group ranks as numbers, which it reads)
#   ROUNDS=1            runs per side and N (sides alternate within a round)
# Each run is timed by /usr/bin/time -v under flock /work/.bench.lock (one benchmark at a time).
set -euo pipefail
cd "$(dirname "$0")/../../.."
BUILD=${BUILD:-build}
ENTRIES=${ENTRIES:-2000}
HANG=${HANG:-frozen-rank}
FORMAT=${FORMAT:-json}
WORK=${WORK:-/tmp/collie_analyze_scale}
ROUNDS=${ROUNDS:-1}
BEFORE=${BEFORE:-}
LOCK=${LOCK:-/work/.bench.lock}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(256 1024 4096 16384)
collie="${COLLIE:-$BUILD/src/cli/collie}"
gen="$BUILD/scripts/bench/analyze_gen"
for b in "$collie" "$gen"; do
  [ -x "$b" ] || { echo "analyze_scale: $b is missing (cmake --build $BUILD --target collie_cli analyze_gen)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "analyze_scale: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }
list=0
[ -n "$BEFORE" ] && list=1
mkdir -p "$WORK"
results="$WORK/results.$$"
: > "$results"
sides=(after)
[ -n "$BEFORE" ] && sides=(before after)

for n in "${sizes[@]}"; do
  dir="$WORK/n${n}_e${ENTRIES}_${HANG}_${FORMAT}_l${list}"
  if [ ! -f "$dir/.complete" ]; then
    rm -rf "$dir"
    echo "generating $n dumps of $ENTRIES entries ($HANG, $FORMAT) in $dir ..." >&2
    "$gen" --ranks "$n" --entries "$ENTRIES" --hang "$HANG" --format "$FORMAT" \
      --list-ranks "$list" --threads 2 --out "$dir" > "$dir.gen"
    mv "$dir.gen" "$dir/.gen" && touch "$dir/.complete"
  fi
  expect=$(sed -n 's/.*culprits: //p' "$dir/.gen")
  bytes=$(du -sb "$dir" | cut -f1)
  for round in $(seq "$ROUNDS"); do
    order=("${sides[@]}")
    # Alternate which side runs first, so the page cache and the machine's load fall on both.
    if [ ${#sides[@]} -eq 2 ] && [ $((round % 2)) -eq 0 ]; then order=(after before); fi
    for side in "${order[@]}"; do
      bin="$collie"
      [ "$side" = before ] && bin="$BEFORE"
      out="$WORK/out.$$"
      flock "$LOCK" /usr/bin/time -v "$bin" analyze "$dir" --json > "$out" 2> "$out.time" || true
      wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$out.time" |
        awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
      rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$out.time")
      cpu=$(sed -n 's/.*\(User\|System\) time (seconds): //p' "$out.time" | awk '{ s += $1 } END { print s }')
      named=$(python3 - "$out" <<'EOF'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception:
    print("unreadable"); sys.exit()
c = j.get("culprits", [])
if isinstance(c, list):  # collie before ranges: a list of numbers
    c = ",".join(map(str, c))
def expand(s):
    out = []
    for part in filter(None, s.split(",")):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out
print(",".join(map(str, expand(c))) or "none")
EOF
)
      ok=no
      [ "$named" = "$expect" ] && ok=yes
      echo "$n $side $bytes $wall $rss $ok $cpu" >> "$results"
      echo "N=$n $side: ${wall} s (cpu ${cpu} s), $((rss / 1024)) MB, culprit named: $ok" >&2
      rm -f "$out" "$out.time"
    done
  done
  [ "${CLEAN:-0}" = 1 ] && rm -rf "$dir"
done

python3 - "$results" "$HANG" "$ENTRIES" "$FORMAT" <<'EOF'
import math, sys
from collections import defaultdict
rows = defaultdict(list)
for line in open(sys.argv[1]):
    n, side, b, wall, rss, ok, cpu = line.split()
    rows[(side, int(n))].append((int(b), float(wall), int(rss), ok, float(cpu)))
print(f"collie analyze: {sys.argv[2]} job, {sys.argv[3]} entries per dump, {sys.argv[4]} dumps "
      f"(median of rounds)")
print(f"{'side':>6} {'N':>7} {'dumps GB':>9} {'wall s':>8} {'cpu s':>8} {'peak MB':>8} "
      f"{'culprit':>8}")
fits = defaultdict(list)
for (side, n) in sorted(rows, key=lambda k: (k[0] != "before", k[1])):
    r = sorted(rows[(side, n)], key=lambda x: x[1])
    b, wall, rss, ok, cpu = r[len(r) // 2]
    print(f"{side:>6} {n:>7} {b / 1e9:>9.2f} {wall:>8.2f} {cpu:>8.2f} {rss / 1024:>8.0f} {ok:>8}")
    fits[side].append((n, wall, rss, cpu))
for side, pts in fits.items():
    if len(pts) < 2:
        continue
    for name, k in (("wall time", 1), ("cpu time", 3), ("peak memory", 2)):
        xs = [math.log(p[0]) for p in pts]
        ys = [math.log(max(p[k], 1e-3)) for p in pts]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        print(f"{side}: {name} grows as N^{slope:.2f}")
EOF
rm -f "$results"
