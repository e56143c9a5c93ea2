#!/usr/bin/env bash
# End-to-end tests of `collie report` through the built binary. Usage:
#   report_cli_test.sh COLLIE SOURCE_DIR CASE     CASE: junit | html | gate | badinput | sweep | shared
# junit:    render, compare and accept JUnit validate against tests/reports/report_junit.xsd
# html:     the HTML report opens in headless Chromium without console errors; the screenshot is
#           not blank and the DOM holds the busbw/latency plots and the per-rank view; the golden
#           acceptance report opens cleanly too, with its verdict and perf chart
# gate:     a third real run of one configuration passes compare against a baseline of two;
#           one run slowed down through COLLIE_PERF_TEST_DELAY_US is inconclusive (exit 6),
#           two such runs fail it with exit 1
# badinput: empty / truncated / corrupt / mismatched inputs exit 2 with one line on stderr
# sweep:    rows that each pass while the whole sweep is undecided exit 6 (inconclusive), and a
#           slowdown every row shares, too small for any row's spread, fails (exit 1); a baseline
#           run slowed as a whole is named by its file
# shared:   outputs written into a folder others can write: links planted under the names a
#           temporary file could take (out.csv.part, .out.json.<pid>.tmp) are not written through
set -euo pipefail
COLLIE=$1
SRC=$2
CASE=$3
G="$SRC/tests/reports/golden"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

case "$CASE" in
junit)
  "$COLLIE" report render "$G/report_input_gloo4.json" "$G/report_input_gloo2.json" \
    --format junit -o "$W/render.xml"
  xmllint --noout --schema "$SRC/tests/reports/report_junit.xsd" "$W/render.xml"
  xmllint --noout --schema "$SRC/tests/reports/report_junit.xsd" "$G/report_render.junit.xml"
  xmllint --noout --schema "$SRC/tests/reports/report_junit.xsd" "$G/report_compare.junit.xml"
  xmllint --noout --schema "$SRC/tests/reports/report_junit.xsd" "$G/accept_report.junit.xml"
  rc=0
  "$COLLIE" report compare "$G/report_input_gloo4.json" "$G/report_input_gloo4.json" \
    --format junit -o "$W/compare.xml" 2>/dev/null || rc=$?
  [ "$rc" = 0 ] || fail "a file compared with itself must pass (exit $rc)"
  xmllint --noout --schema "$SRC/tests/reports/report_junit.xsd" "$W/compare.xml"
  # The schema must reject what CI tools reject: a testcase without a name.
  sed 's/<testcase name="[^"]*"/<testcase/' "$W/render.xml" > "$W/broken.xml"
  if xmllint --noout --schema "$SRC/tests/reports/report_junit.xsd" "$W/broken.xml" 2>/dev/null; then
    fail "the XSD accepted a testcase without a name"
  fi
  ;;
html)
  "$COLLIE" report render "$G/report_input_gloo4.json" "$G/report_input_gloo2.json" \
    --format html -o "$W/report.html"
  grep -q -E '(src|href)="(https?:)?//' "$W/report.html" && fail "the HTML references an external asset"
  chrome=(/usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-background-networking
          --disable-component-update --disable-sync --no-first-run --enable-logging=stderr --v=0
          --window-size=1280,2000)
  timeout 60 "${chrome[@]}" --user-data-dir="$W/p1" --dump-dom "file://$W/report.html" \
    > "$W/dom.html" 2> "$W/chrome1.log" || fail "chromium --dump-dom failed: $(tail -3 "$W/chrome1.log")"
  timeout 60 "${chrome[@]}" --user-data-dir="$W/p2" --screenshot="$W/shot.png" \
    "file://$W/report.html" > /dev/null 2> "$W/chrome2.log" || fail "chromium --screenshot failed"
  if grep -E 'CONSOLE.*(error|Error)|Uncaught|Failed to load' "$W/chrome1.log" "$W/chrome2.log"; then
    fail "the page logged errors"
  fi
  count() { grep -o "$1" "$W/dom.html" | wc -l; }
  [ "$(count 'class="plot busbw-plot"')" -ge 2 ] || fail "fewer than 2 busbw plots in the DOM"
  [ "$(count 'class="plot latency-plot"')" -ge 2 ] || fail "fewer than 2 latency plots in the DOM"
  [ "$(count '<polyline class="series"')" -ge 4 ] || fail "plot lines missing"
  [ "$(count 'class="rank-plot"')" -ge 2 ] || fail "per-rank plots missing"
  [ "$(count 'class="bar straggler"')" -ge 1 ] || fail "straggler bar missing"
  python3 "$SRC/tests/reports/report_png_check.py" "$W/shot.png"
  # The acceptance report shares the page style; it must load cleanly and show its perf chart.
  timeout 60 "${chrome[@]}" --user-data-dir="$W/p3" --dump-dom "file://$G/accept_report.html" \
    > "$W/accept_dom.html" 2> "$W/chrome3.log" || fail "chromium could not open the accept report"
  if grep -E 'CONSOLE.*(error|Error)|Uncaught|Failed to load' "$W/chrome3.log"; then
    fail "the accept report logged errors"
  fi
  grep -q '<span class="fail">REJECTED</span>' "$W/accept_dom.html" || fail "accept verdict missing"
  [ "$(grep -o 'class="plot busbw-plot"' "$W/accept_dom.html" | wc -l)" = 1 ] ||
    fail "the accept report's perf chart is missing"
  ;;
gate)
  # The injected-slowdown check (docs/ci.md "Checking the gate itself"): a baseline of two real
  # runs; two more runs of the same build raise no alarm (exit 0, or 6 when this machine's load
  # moved them beyond what two runs resolve; never 1), one run slowed down through
  # COLLIE_PERF_TEST_DELAY_US is inconclusive (exit 6) and two of them fail it (exit 1). The allowance is wide (this shared 2-core
  # machine moves one build's run-level time by several times under load) and the slowdown far
  # above it. The documented gate settings on real reruns are tests/reports/gate_reruns_test.sh.
  run() { "$COLLIE" perf all_reduce -b 16K -e 16K -w 2 -I 1 --np 2 -J "$W/$1.json" "${@:2}" \
    > "$W/$1.log" 2>&1 || fail "collie perf $1 failed: $(tail -3 "$W/$1.log")"; }
  gate=(--metric time --max-regression 1000%)
  # Baseline (a, b) and current (c, d) runs alternate, as docs/ci.md tells users to run them: a
  # change in this machine's load then lands on both sides (run back to back, a load that came
  # between b and c made both current runs 20x slower than the baseline in a CI run).
  run a -n 30
  run c -n 30
  run b -n 30
  run d -n 30
  "$COLLIE" report baseline "$W/a.json" "$W/b.json" -o "$W/base.json" 2>/dev/null
  rc=0
  "$COLLIE" report compare "$W/base.json" "$W/c.json" "$W/d.json" "${gate[@]}" > "$W/same.txt" \
    2> "$W/same.err" || rc=$?
  cat "$W/same.txt"
  case "$rc" in
    0 | 6) ;;
    *) fail "two runs of the same configuration: exit $rc, expected 0 or 6: $(cat "$W/same.err")" ;;
  esac
  grep -q '2 vs 2' "$W/same.txt" || fail "the rows were not judged on 2 baseline runs vs 2"
  # The slowdown must stay far above the 10x allowance however loaded this machine is: 40x the
  # slowest mean time the three runs saw, and at least 100 ms per call.
  delay=$(python3 -c 'import json,sys; t=max(r["time_us"] for f in sys.argv[1:] for r in json.load(open(f))["rows"]); print(max(100000, int(40*t)))' "$W/a.json" "$W/b.json" "$W/c.json" "$W/d.json")
  echo "injected delay: $delay us per call"
  COLLIE_ENABLE_TEST_HOOKS=1 COLLIE_PERF_TEST_DELAY_US=$delay run slow1 -n 4
  COLLIE_ENABLE_TEST_HOOKS=1 COLLIE_PERF_TEST_DELAY_US=$delay run slow2 -n 4
  # One slow run is not enough evidence (it may have sat in a noisy moment): inconclusive.
  rc=0
  "$COLLIE" report compare "$W/base.json" "$W/slow1.json" "${gate[@]}" > "$W/one.txt" 2>&1 || rc=$?
  [ "$rc" = 6 ] || { cat "$W/one.txt"; fail "one slow run against two: exit $rc, expected 6 (inconclusive)"; }
  rc=0
  "$COLLIE" report compare "$W/base.json" "$W/slow1.json" "$W/slow2.json" "${gate[@]}" \
    > "$W/slow.txt" 2> "$W/slow.err" || rc=$?
  cat "$W/slow.txt"
  [ "$rc" = 1 ] || fail "a $delay us/call slowdown in 2 runs was not flagged (exit $rc)"
  grep -q '^regression ' "$W/slow.txt" || fail "no regression row in the table"
  grep -q 'FAIL' "$W/slow.err" || fail "no FAIL line on stderr"
  ;;
badinput)
  ok="$G/report_input_gloo4.json"
  : > "$W/empty.json"
  head -c 3000 "$ok" > "$W/truncated.json"
  printf '{"schema": "collie.perf.v1", "run": ]' > "$W/corrupt.json"
  sed 's/"collie.perf.v1"/"collie.perf.v9"/' "$ok" > "$W/newer.json"
  sed 's/"backend": "gloo"/"backend": "mpi"/' "$ok" > "$W/mpi.json"
  # A key given twice (which one counts differs between JSON readers): refused, named.
  sed '0,/"schema": "collie.perf.v1",/s//"schema": "collie.perf.v1", "schema": "collie.perf.v1",/' \
    "$ok" > "$W/dupkey.json"
  [ "$(grep -o '"schema"' "$W/dupkey.json" | wc -l)" = 2 ] || fail "could not build the duplicate-key file"
  expect2() {
    local rc=0
    "$@" > /dev/null 2> "$W/err" || rc=$?
    [ "$rc" = 2 ] || fail "expected exit 2 from: $* (got $rc)"
    [ "$(wc -l < "$W/err")" = 1 ] || fail "expected one stderr line from: $*, got: $(cat "$W/err")"
    echo "ok ($rc): $(cat "$W/err")"
  }
  for f in empty truncated corrupt newer dupkey; do
    expect2 "$COLLIE" report compare "$ok" "$W/$f.json"
    expect2 "$COLLIE" report render "$W/$f.json" --format md
  done
  expect2 "$COLLIE" report compare "$ok" "$W/missing.json"
  expect2 "$COLLIE" report compare "$ok" "$W/mpi.json"
  expect2 "$COLLIE" report compare "$ok" "$G/report_input_gloo2.json"
  expect2 "$COLLIE" report baseline "$ok" "$G/report_input_gloo2.json" -o "$W/x.json"
  expect2 "$COLLIE" report compare "$ok" "$ok" --max-regression lots
  grep -q "duplicate key 'schema'" <("$COLLIE" report render "$W/dupkey.json" --format md 2>&1) ||
    fail "a duplicate key is not named"
  grep -q 'world size differs' <("$COLLIE" report compare "$ok" "$G/report_input_gloo2.json" 2>&1) \
    || fail "world-size mismatch not named"
  ;;
sweep)
  # Runs made from one real result, each row's samples scaled by a factor per run: a row's runs
  # spread +-15 % (rotated over the rows, so each run's geometric mean over its 8 rows moves ~1 %).
  scale() {  # scale OUT F1 F2 F3: the 8 rows of the input scaled by F1, F2, F3, F1, ... rotated
    python3 - "$G/report_input_gloo2.json" "$@" <<'PY'
import json, sys
src, out, *f = sys.argv[1:]
d = json.load(open(src))
for k, r in enumerate(d["rows"]):
    x = float(f[k % 3])
    r["samples_us"] = [t * x for t in r["samples_us"]]
    r["time_us"] *= x
    for key in ("algbw_gbps", "busbw_gbps"):
        r[key] /= x
json.dump(d, open(out, "w"))
PY
  }
  scale "$W/b1.json" 1.15 1.0 0.87
  scale "$W/b2.json" 1.0 0.87 1.15
  scale "$W/b3.json" 0.87 1.15 1.0
  "$COLLIE" report baseline "$W"/b{1,2,3}.json -o "$W/base.json" 2>/dev/null
  # Two current runs 10 % slower in every row and one as the baseline: every row within what its
  # runs resolve, the sweep beyond its allowance but its runs overlap.
  scale "$W/c1.json" 1.265 1.1 0.957
  scale "$W/c2.json" 1.1 0.957 1.265
  scale "$W/c3.json" 0.87 1.15 1.0
  rc=0
  "$COLLIE" report compare "$W/base.json" "$W"/c{1,2,3}.json > "$W/open.txt" 2>&1 || rc=$?
  grep -q '^inconclusive *whole sweep (8 rows)' "$W/open.txt" || { cat "$W/open.txt"; fail "the sweep is not inconclusive"; }
  grep -q '0 regression(s), 0 wrong-data, 0 missing, 0 inconclusive' "$W/open.txt" ||
    { cat "$W/open.txt"; fail "a row was not unchanged"; }
  [ "$rc" = 6 ] || { cat "$W/open.txt"; fail "an undecided sweep: exit $rc, expected 6"; }
  # All three 10 % slower: the rows still cannot tell, the sweep fails the gate.
  scale "$W/c3.json" 0.957 1.265 1.1
  rc=0
  "$COLLIE" report compare "$W/base.json" "$W"/c{1,2,3}.json --format json > "$W/slow.json" 2>/dev/null || rc=$?
  [ "$rc" = 1 ] || { cat "$W/slow.json"; fail "a 10 % slowdown of every row: exit $rc, expected 1"; }
  python3 - "$W/slow.json" <<'PY' || fail "the JSON does not name the sweep's regression"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["outcome"] == "FAIL" and d["counts"]["regression"] == 0, d["counts"]
assert d["sweep"]["verdict"] == "regression" and d["sweep"]["rows"] == 8, d["sweep"]
assert 0.08 < d["sweep"]["worse"] < 0.1, d["sweep"]["worse"]
PY
  # A baseline run slowed as a whole is named by its file, read back from the baseline file.
  scale "$W/b3.json" 1.3 1.3 1.3
  scale "$W/b1.json" 1.0 1.0 1.0
  scale "$W/b2.json" 1.01 1.01 1.01
  "$COLLIE" report baseline "$W"/b{1,2,3}.json -o "$W/base2.json" 2>/dev/null
  "$COLLIE" report compare "$W/base2.json" "$W"/b{1,2}.json > "$W/named.txt" 2>&1 || true
  grep -q 'baseline run b3.json took 2[0-9.]*% longer than its other 2 runs' "$W/named.txt" ||
    { cat "$W/named.txt"; fail "the slowed baseline run is not named"; }
  echo "ok: rows unchanged, whole sweep inconclusive (exit 6), then a regression (exit 1); b3.json named"
  ;;
shared)
  ok="$G/report_input_gloo4.json"
  printf precious > "$W/victim"
  ln -s "$W/victim" "$W/out.csv.part"
  "$COLLIE" report render "$ok" "$G/report_input_gloo2.json" --format csv -o "$W/out.csv"
  [ "$(cat "$W/victim")" = precious ] || fail "render --format csv wrote through out.csv.part"
  grep -q '^source,collective,' "$W/out.csv" || fail "the CSV has no header"
  # perf -J: links planted for the temporary names of the pids the next processes get.
  python3 -c 'import os, sys
for p in range(os.getpid() + 1, os.getpid() + 400):
    os.symlink(sys.argv[1] + "/victim", f"{sys.argv[1]}/.perf.json.{p}.tmp")' "$W"
  "$COLLIE" perf all_reduce -b 1K -e 1K -n 2 -w 1 --np 2 -J "$W/perf.json" > "$W/perf.log" 2>&1 ||
    fail "collie perf failed: $(tail -3 "$W/perf.log")"
  [ "$(cat "$W/victim")" = precious ] || fail "perf -J wrote through a planted temporary name"
  grep -q '"results"' "$W/perf.json" || fail "perf -J wrote no results"
  ;;
*)
  fail "unknown case $CASE"
  ;;
esac
echo "PASS: $CASE"
