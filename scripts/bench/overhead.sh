#!/usr/bin/env bash
# collie perf overhead over raw Gloo, measured in the same run on the same sizes and ranks.
# Runs ROUNDS alternating rounds (raw, collie, raw, collie, ...) and keeps each side's best time
# per size, then prints the ratio collie/raw. Targets: <= 1.03 at >= 64 KiB, <= 1.05 below.
#   scripts/bench/overhead.sh [BUILD_DIR]     env: NP=4 MIN=8 MAX=16777216 FACTOR=8 ITERS=20
#                                                  WARMUP=5 ROUNDS=3
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
collie=$build/src/cli/collie
NP=${NP:-4} MIN=${MIN:-8} MAX=${MAX:-16777216} FACTOR=${FACTOR:-8}
ITERS=${ITERS:-20} WARMUP=${WARMUP:-5} ROUNDS=${ROUNDS:-3}
[[ -x $collie ]] || { echo "overhead.sh: $collie not built (cmake --build $build)" >&2; exit 2; }
raw=$build/scripts/bench/raw_gloo_allreduce
[[ -x $raw ]] || { echo "overhead.sh: $raw not built (cmake --build $build)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run_raw() {  # $1 = round
  local dir=$work/store$1 pids=()
  mkdir -p "$dir"
  for ((r = 0; r < NP; r++)); do
    "$raw" $r $NP "$dir" $MIN $MAX $FACTOR $ITERS $WARMUP >"$work/raw$1.r$r" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  cat "$work/raw$1.r0" >>"$work/raw.txt"
}

run_collie() {  # $1 = round; rank 0's time (-a 0), in place, no validation, like the raw loop
  "$collie" perf all_reduce --backend gloo -np $NP -b $MIN -e $MAX -f $FACTOR -n $ITERS \
    -w $WARMUP -c 0 -a 0 -d float -o sum --placement in -J "$work/c$1.json" >/dev/null
  python3 - "$work/c$1.json" >>"$work/collie.txt" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    print(r["size_bytes"], r["time_us"])
PY
}

for ((i = 0; i < ROUNDS; i++)); do run_raw $i; run_collie $i; done

python3 - "$work/raw.txt" "$work/collie.txt" "$NP" <<'PY'
import sys
def best(path):
    d = {}
    for line in open(path):
        s, t = line.split()
        d[int(s)] = min(d.get(int(s), float("inf")), float(t))
    return d
raw, col, np = best(sys.argv[1]), best(sys.argv[2]), sys.argv[3]
print(f"# collie perf all_reduce vs raw gloo::allreduce, {np} ranks, float sum, best of rounds")
print(f"{'size (B)':>10}  {'raw (us)':>10}  {'collie (us)':>11}  {'ratio':>6}  target")
fail = 0
for s in sorted(raw):
    if s not in col:
        continue
    ratio = col[s] / raw[s]
    target = 1.03 if s >= 65536 else 1.05
    ok = "ok" if ratio <= target else "OVER"
    fail += ratio > target
    print(f"{s:>10}  {raw[s]:>10.2f}  {col[s]:>11.2f}  {ratio:>6.3f}  <= {target} {ok}")
print(f"# {fail} size(s) over target")
PY
