#!/usr/bin/env bash
# The CI gate at the settings docs/ci.md documents, on real reruns of one build (issue 26):
# both directions of the verdict, in a network namespace of its own (its loopback carries Gloo).
#   quiet: RUNS reruns of `collie perf` (the documented sweep); compared pairwise (one run per
#          side), against a 3-run baseline one run at a time, and 3 runs at a time against a
#          3-run baseline whose runs alternate with them (runs s, s+2, s+4 against s+1, s+3,
#          s+5, as docs/ci.md tells users to run them): at most 1 false alarm (exit 1) in those 5
#          (the gate's designed rate, below), none with one run on a side (at most
#          inconclusive, by design).
#   fires: tc tbf on the namespace's loopback at 50 % and then 80 % of the bandwidth the
#          baseline's largest row used; 3 runs each, alternating with 3 runs at full rate that
#          make their baseline: exit 1 with a regression row both times.
#   usage: gate_reruns_test.sh COLLIE_BINARY [RUNS]      (root: network namespace, tc)
# Exit: 0 pass, 1 fail, 77 skipped outside CI when the machine cannot provide a namespace or tc
# (under CI=true that is a failure: tests/support/skip.sh).
set -u
COLLIE=${1:?collie binary}
RUNS=${2:-20}
NS="gate$$"
W=$(mktemp -d /tmp/collie_gate.XXXXXX)
cleanup() {
  ip netns pids "$NS" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
  ip netns del "$NS" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
source "$(dirname "$0")/../support/skip.sh"
[ "$(id -u)" = 0 ] || skip "needs root (CAP_NET_ADMIN) for a network namespace and tc"
command -v tc >/dev/null || skip "tc (iproute2) is not installed"
ip netns add "$NS" 2>/dev/null || skip "cannot create network namespaces here"
ip -n "$NS" link set lo up

# The documented settings (docs/ci.md, "Settings this gate is tested at").
SWEEP=(all_reduce -np 2 -b 64K -e 4M -f 4 -w 20 -n 20 -I 1)
GATE=(--max-regression 15%)

perf() {  # perf NAME: one run of the documented sweep inside the namespace
  ip netns exec "$NS" "$COLLIE" perf "${SWEEP[@]}" -J "$W/$1.json" >"$W/$1.log" 2>&1 ||
    fail "collie perf $1 failed: $(tail -3 "$W/$1.log")"
}
# compare LABEL BASE CUR...: runs the gate; sets RC; a false alarm is exit 1.
compare() {
  local label=$1
  shift
  RC=0
  "$COLLIE" report compare "$@" "${GATE[@]}" >"$W/$label.txt" 2>"$W/$label.err" || RC=$?
  [ $RC = 2 ] && { cat "$W/$label.err"; fail "$label: unusable input"; }
}

start=$(date +%s)
for i in $(seq "$RUNS"); do perf "run$i"; done
"$COLLIE" report baseline "$W/run1.json" "$W/run2.json" "$W/run3.json" -o "$W/base.json" \
  2>/dev/null || fail "report baseline"
alarms=0 inconclusive=0 passed=0 checks=0 one_run=0
# tally LABEL COULD_FIRE: counts the gate's answer. A comparison with one run on a side cannot
# alarm by design (at most inconclusive): it is counted apart, not as a quiet check. Any exit but
# 0, 6 and 1 (a crash, a signal) fails the test.
tally() {
  case $RC in
    0 | 6 | 1) ;;
    *) cat "$W/$1.txt" "$W/$1.err"; fail "$1: report compare exited $RC" ;;
  esac
  if [ "$2" = 0 ]; then
    one_run=$((one_run + 1))
    [ $RC = 1 ] && { cat "$W/$1.txt"; fail "$1: a one-run comparison alarmed"; }
    return 0
  fi
  checks=$((checks + 1))
  case $RC in
    0) passed=$((passed + 1)) ;;
    6) inconclusive=$((inconclusive + 1)) ;;
    1) alarms=$((alarms + 1)); echo "FALSE ALARM ($1):"; cat "$W/$1.txt" ;;
  esac
}
for i in $(seq 1 $((RUNS - 1))); do
  compare "pair$i" "$W/run$i.json" "$W/run$((i + 1)).json"
  tally "pair$i" 0
done
for i in $(seq 4 "$RUNS"); do
  compare "one$i" "$W/base.json" "$W/run$i.json"
  tally "one$i" 0
done
# 3 runs against 3 that alternate with them. Run back to back (baseline runs 1-3, then 4-6, ...),
# a change in the machine's load between the two sets is a change the gate rightly reports, and
# a CI run saw it: the baseline at 1.94 GB/s, runs 4-6 at 1.19 (2 false alarms at 15 %).
for s in $(seq 1 3 $((RUNS - 5))); do
  "$COLLIE" report baseline "$W/run$s.json" "$W/run$((s + 2)).json" "$W/run$((s + 4)).json" \
    -o "$W/base$s.json" 2>/dev/null || fail "report baseline of runs $s, $((s + 2)), $((s + 4))"
  compare "three$s" "$W/base$s.json" "$W/run$((s + 1)).json" "$W/run$((s + 3)).json" \
    "$W/run$((s + 5)).json"
  tally "three$s" 1
done
echo "quiet: $RUNS reruns; $checks comparisons that could alarm (3 runs against the 3 runs" \
  "between them): $passed pass, $inconclusive inconclusive, $alarms false alarm(s); $one_run" \
  "one-run comparisons (never an alarm by design): none alarmed"
# A statistical gate has a false-alarm rate by design: a regression needs the medians beyond
# what the baseline's noise makes with chance 5 % / rows and every run beyond the allowance;
# simulated at this test's noisiest CI spread (17 % run to run) that is 0.7 % of comparisons,
# so 2 or more of 5 happen with chance < 0.1 %, and the gate before that rule (3.8 % a
# comparison) reached 1 in 5 in one CI run. One is reported above; two fail.
[ $alarms -le 1 ] || fail "$alarms false alarms on reruns of one build (at most 1 in $checks)"
# A gate that answers INCONCLUSIVE to every row of reruns of one build decides nothing: at most
# three quarters of the rows those comparisons judged (one noisy row makes a whole comparison
# exit 6). Measured here with a CI run beside it (both cores busy): 22 of 40 rows.
read -r rows_judged rows_inconclusive < <(python3 - "$W"/three*.txt <<'PY'
import re, sys
judged = inc = 0
for path in sys.argv[1:]:
    m = re.search(r"(\d+) regression\(s\), (\d+) wrong-data, (\d+) missing, (\d+) inconclusive, "
                  r"(\d+) improvement\(s\), (\d+) unchanged", open(path).read())
    if m:
        n = [int(x) for x in m.groups()]
        judged += n[0] + n[3] + n[4] + n[5]
        inc += n[3]
print(judged, inc)
PY
)
echo "rows judged by them: $rows_judged, inconclusive: $rows_inconclusive"
[ "${rows_judged:-0}" -gt 0 ] || fail "no row judged in the comparisons that could alarm"
[ $((rows_inconclusive * 4)) -le $((rows_judged * 3)) ] ||
  fail "$rows_inconclusive of $rows_judged rows were inconclusive (at most three quarters)"

# The bandwidth the baseline's largest row used on the loopback: all_reduce over 2 ranks moves
# each rank's whole buffer once (ring reduce-scatter + all-gather), so 2 x size per op crosses lo.
rate=$(python3 - "$W/base.json" <<'PY'
import json, statistics, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["placement"] == "out"]
big = max(rows, key=lambda r: r["size_bytes"])
t = statistics.median(big["samples_us"])
print(int(2 * big["size_bytes"] * 8 / (t * 1e-6)))  # bit/s
PY
)
echo "baseline loopback rate at the largest size: $((rate / 1000000)) Mbit/s"
# Each slowed run alternates with a run at full rate, and those make its baseline (docs/ci.md).
for pct in 50 80; do
  r=$((rate * pct / 100))
  for k in 1 2 3; do
    perf "ref${pct}_$k"
    ip netns exec "$NS" tc qdisc replace dev lo root tbf rate "${r}bit" burst 256kb latency 50ms ||
      fail "tc tbf on lo failed"
    perf "slow${pct}_$k"
    ip netns exec "$NS" tc qdisc del dev lo root
  done
  "$COLLIE" report baseline "$W/ref${pct}_1.json" "$W/ref${pct}_2.json" "$W/ref${pct}_3.json" \
    -o "$W/ref$pct.json" 2>/dev/null || fail "report baseline of the full-rate runs at $pct %"
  compare "slow$pct" "$W/ref$pct.json" "$W/slow${pct}_1.json" "$W/slow${pct}_2.json" "$W/slow${pct}_3.json"
  cat "$W/slow$pct.txt" | head -8
  [ $RC = 1 ] || fail "a link at $pct % of the baseline's bandwidth was not caught (exit $RC)"
  grep -q '^regression ' "$W/slow$pct.txt" || fail "no regression row at $pct %"
done
echo "PASS in $(($(date +%s) - start)) s"
