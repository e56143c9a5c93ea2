#!/usr/bin/env bash
# The CI gate at its defaults, the way docs/ci.md tells users to run it: GATES times, 3 runs for
# a baseline (`collie report baseline`) and 3 more runs of the same build, alternating with them
# (ORDER=alternate, docs/ci.md's recipe) or after them (ORDER=baseline-first: a baseline kept from
# earlier), compared with `collie report compare` and no --max-regression. Each gate is also judged on a 20 %
# slowdown: its current runs with every time x 1.20 (busbw / 1.20: 16.7 % less bandwidth) and
# nothing else changed, which must fail. BEFORE=COLLIE (another build's collie, e.g. main's)
# judges the same files a second time, side by side.
#   usage: scripts/bench/gate_defaults.sh [COLLIE]        (default build/src/cli/collie)
#   env: GATES (10), RUNS (3: runs per side, the recipe's; more shows what more runs buy),
#        ORDER (alternate), SWEEP (the perf flags: all_reduce -np 2 -b 1M -e 16M -w 20 -n 20 -I 1),
#        GATE_FLAGS (extra compare flags, none by default), BEFORE, OUT (kept results folder)
# Prints one line per gate (load average when it started, outcome and exit of the unchanged
# build, the allowance used, the smallest regression the baseline says a row catches and the
# whole sweep catches, outcome of the slowdown) and a tally. Exit 0 when >= 9 of 10 unchanged gates pass (scaled to GATES), none
# fails and every slowdown fails; 1 otherwise.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
COLLIE=${1:-$here/../../build/src/cli/collie}
[ -x "$COLLIE" ] || { echo "gate_defaults: no collie at $COLLIE" >&2; exit 2; }
GATES=${GATES:-10}
RUNS=${RUNS:-3}
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "gate_defaults: RUNS must be a positive number, not '$RUNS'" >&2; exit 2; }
mapfile -t RUN_IDS < <(seq "$RUNS")
ORDER=${ORDER:-alternate}
case "$ORDER" in alternate | baseline-first) ;; *)
  echo "gate_defaults: ORDER must be alternate or baseline-first, not '$ORDER'" >&2
  exit 2
  ;;
esac
read -r -a SWEEP <<<"${SWEEP:-all_reduce -np 2 -b 1M -e 16M -w 20 -n 20 -I 1}"
read -r -a GATE_FLAGS <<<"${GATE_FLAGS:-}"
W=${OUT:-$(mktemp -d /tmp/collie_gate_defaults.XXXXXX)}
mkdir -p "$W"

files() {  # files KIND: gate g's runs of KIND (base, cur, slow), one path each
  local i
  for i in "${RUN_IDS[@]}"; do echo "$W/g${g}_$1$i.json"; done
}
perf() {  # perf NAME: one run of the sweep
  "$COLLIE" perf "${SWEEP[@]}" -J "$W/$1.json" >"$W/$1.log" 2>&1 ||
    { echo "gate_defaults: collie perf $1 failed: $(tail -2 "$W/$1.log")" >&2; exit 2; }
}
slow() {  # slow IN OUT: the run IN with every time x 1.20
  python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["rows"]:
    r["time_us"] *= 1.2
    r["rank_time_us"] = [t * 1.2 for t in r.get("rank_time_us", [])]
    for k in ("algbw_gbps", "busbw_gbps"):
        r[k] /= 1.2
    r["samples_us"] = [t * 1.2 for t in r.get("samples_us", [])]
    for k in list(r.get("iter_stats", {}) or {}):
        if k.endswith("_us"):
            r["iter_stats"][k] *= 1.2
json.dump(d, open(sys.argv[2], "w"))
PY
}
# judge BIN BASE CUR... : "OUTCOME exit" of a compare, its resolution line kept in $W/last.txt
judge() {
  local bin=$1 rc=0
  shift
  "$bin" report compare "$@" "${GATE_FLAGS[@]}" >"$W/last.txt" 2>"$W/last.err" || rc=$?
  echo "$(head -1 "$W/last.txt" | sed 's/collie report compare: //') $rc"
}

printf '%-4s  %-14s  %-18s  %-9s  %-9s  %-9s  %-18s  %s\n' gate load unchanged allowed catches \
  "sweep" "20% slower" "${BEFORE:+before: unchanged / 20% slower}"
pass=0 fail=0 incon=0 caught=0 bpass=0 bcaught=0
for g in $(seq "$GATES"); do
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  if [ "$ORDER" = alternate ]; then
    for i in "${RUN_IDS[@]}"; do perf "g${g}_base$i" && perf "g${g}_cur$i"; done
  else
    for i in "${RUN_IDS[@]}"; do perf "g${g}_base$i"; done
    for i in "${RUN_IDS[@]}"; do perf "g${g}_cur$i"; done
  fi
  "$COLLIE" report baseline $(files base) -o "$W/g${g}_baseline.json" 2>/dev/null ||
    { echo "gate_defaults: report baseline failed" >&2; exit 2; }
  for i in "${RUN_IDS[@]}"; do slow "$W/g${g}_cur$i.json" "$W/g${g}_slow$i.json"; done
  same=$(judge "$COLLIE" "$W/g${g}_baseline.json" $(files cur))
  cp "$W/last.txt" "$W/g${g}_unchanged.txt"
  line=$(sed -n 3p "$W/last.txt")
  allowed=$(grep -oE '^allowed [0-9.]+%' <<<"$line" | cut -d' ' -f2)
  catches=$(grep -oE 'catches 9 times in 10: [0-9.]+%' <<<"$line" | grep -oE '[0-9.]+%$')
  sweep_line=$(grep -m1 '^whole sweep' "$W/last.txt")
  sweep_catches=$(grep -oE 'catches 9 times in 10: [0-9.]+%' <<<"$sweep_line" | grep -oE '[0-9.]+%$')
  slowed=$(judge "$COLLIE" "$W/g${g}_baseline.json" $(files slow))
  cp "$W/last.txt" "$W/g${g}_slowed.txt"
  before=""
  if [ -n "${BEFORE:-}" ]; then
    b1=$(judge "$BEFORE" "$W/g${g}_baseline.json" $(files cur))
    b2=$(judge "$BEFORE" "$W/g${g}_baseline.json" $(files slow))
    before="$b1 / $b2"
    [ "${b1##* }" = 0 ] && bpass=$((bpass + 1))
    [ "${b2##* }" = 1 ] && bcaught=$((bcaught + 1))
  fi
  printf '%-4s  %-14s  %-18s  %-9s  %-9s  %-9s  %-18s  %s\n' "$g" "$load" "$same" "${allowed:--}" \
    "${catches:--}" "${sweep_catches:--}" "$slowed" "$before"
  case "${same##* }" in
    0) pass=$((pass + 1)) ;;
    6) incon=$((incon + 1)) ;;
    *) fail=$((fail + 1)) ;;
  esac
  [ "${slowed##* }" = 1 ] && caught=$((caught + 1))
done
echo "order $ORDER; unchanged build: $pass of $GATES PASS, $incon INCONCLUSIVE, $fail other (FAIL or error);" \
  "20% slowdown: $caught of $GATES FAIL${BEFORE:+; before: $bpass PASS, $bcaught caught}"
echo "runs and tables: $W"
need=$(((GATES * 9 + 9) / 10))
[ "$pass" -ge "$need" ] && [ "$fail" = 0 ] && [ "$caught" = "$GATES" ]
