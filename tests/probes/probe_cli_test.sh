#!/usr/bin/env bash
# `collie probe` and `collie accept` through the built binary, as real processes on 127.0.0.1.
#   usage: probe_cli_test.sh COLLIE SOURCE_DIR CASE [MPIRUN]  (MPIRUN only when MPI is built)
#   launch:  under `collie launch`, under plain env:// variables (ranks started here) and with
#            -np (local relaunch): every probe runs, -J writes its JSON, --debug-port starts a
#            debug server in each rank, COLLIE_INIT_METHOD does not stop -np from starting ranks
#   mpirun:  under mpirun with --backend mpi (self rendezvous) and with gloo (env:// store)
#   flags:   the launch/output flags behave as `collie perf`'s (one validator, src/cli/run_flags.h):
#            same bad-flag messages, exit 2, one line on stderr, nothing started; in a Slurm
#            allocation outside a job step each names the srun line instead
#   accept:  the shipped YAML spec (with its perf sweep; without pairwise, see local_spec)
#            accepts 3 real Gloo ranks, reports in
#            every format (JUnit validated against the XSD); corrupted data and a slowed sweep
#            against a baseline are rejected naming the size and rank; a perf step hung past
#            its deadline still leaves the reports (exit 1); YAML errors exit 2
#   healthy: `collie probe pairwise -np 4` names nothing and exits 0, 3 runs in a row (quick
#            schedule) and once with the full schedule; bad schedule flags exit 2
# Exit: 0 pass, 1 fail, 77 skipped (mpirun case without mpirun / MPI backend; a failure under
# CI=true, where bootstrap installs Open MPI: tests/support/skip.sh).
set -u
COLLIE=${1:?collie binary}
SRC=${2:?source dir}
CASE=${3:?case}
MPIRUN=${4:-}
W=$(mktemp -d /tmp/collie_probe_cli.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$W"
}
trap cleanup EXIT
trap "exit 1" INT TERM  # the EXIT trap cleans up
fail() { echo "FAIL: $*"; exit 1; }
source "$(dirname "$0")/../support/skip.sh"
show() { echo "----- $1 -----"; cat "$1"; }
expect() {  # expect FILE PATTERN WHAT
  grep -qE -- "$2" "$1" || { show "$1"; fail "$3"; }
}
source "$(dirname "$0")/../support/free_ports.sh"
port() { free_ports 2; }
# The sample spec without its pairwise check: with every rank on this one busy machine, ranks
# stand in for hosts and their links swing by more than the sample's 50 % slow threshold.
# The multi-host e2e test runs the full sample.
local_spec() {
  sed '/^  - probe: pairwise/,/^$/d' "$SRC/docs/accept-spec.yaml" > "$1"
  grep -q pairwise "$1" && fail "local_spec kept the pairwise check"
  [ "$(grep -c '^  - ' "$1")" = 4 ] || fail "local_spec: expected 4 checks in $(cat "$1")"
}
# json FILE EXPR: evaluates a Python expression on the JSON document `j`.
json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }

case "$CASE" in
launch)
  timeout 60 "$COLLIE" launch -np 3 -- "$COLLIE" probe connectivity -T 5 -J "$W/conn.json" \
    > "$W/conn.log" 2>&1 || { show "$W/conn.log"; fail "connectivity under collie launch"; }
  expect "$W/conn.log" "OK: all 3 pairs reachable" "connectivity did not report 3 pairs"
  [ "$(json "$W/conn.json" "j['world_size'], j['all_reachable']")" = "3 True" ] ||
    fail "connectivity JSON: $(cat "$W/conn.json")"

  # Plain env:// variables, every rank started by hand (what a scheduler's prolog would do).
  p=$(port)
  for r in 0 1; do
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$p RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r \
      timeout 60 "$COLLIE" probe pairwise --bytes 64K -n 2 -T 5 -J "$W/pw.json" \
      > "$W/pw.$r.log" 2>&1 &
    PIDS+=($!)
  done
  # Exit 1 only means "a link looks slow" (two ranks on a busy machine may differ); not a failure.
  for r in 0 1; do
    rc=0
    wait "${PIDS[$r]}" || rc=$?
    [ "$rc" -le 1 ] || { show "$W/pw.$r.log"; fail "pairwise rank $r (env://) exit $rc"; }
  done
  PIDS=()
  expect "$W/pw.0.log" "bandwidth \(GB/s" "pairwise printed no bandwidth matrix"
  [ "$(json "$W/pw.json" "j['world_size']")" = 2 ] || fail "pairwise JSON: $(head -c 300 "$W/pw.json")"

  # -np relaunches locally; --debug-port starts each rank's debug server on PORT + local rank.
  dp=$(port)
  timeout 60 "$COLLIE" probe connectivity -np 2 --repeats 25 --interval 0.1 -T 5 \
    --debug-port "$dp" -J "$W/np.json" > "$W/np.log" 2>&1 &
  job=$!
  PIDS+=($job)
  up=""
  for i in $(seq 100); do
    if curl -sf "http://127.0.0.1:$((dp + 1))/healthz" > /dev/null; then up=1; break; fi
    sleep 0.1
  done
  wait $job || { show "$W/np.log"; fail "connectivity -np 2 --debug-port failed"; }
  [ -n "$up" ] || fail "no debug server answered on port $((dp + 1)) (rank 1) during the probe"
  expect "$W/np.log" "^OK: all 1 pairs reachable" "rank 0's report must be unprefixed, as perf's"
  [ "$(json "$W/np.json" "j['world_size']")" = 2 ] || fail "-np 2 JSON"
  # COLLIE_INIT_METHOD names where ranks meet, not how many: -np still starts local ranks (as
  # perf always did; probe and accept ran a lone rank that failed until issue 19), which meet
  # through it.
  COLLIE_INIT_METHOD="file://$W/init.store" timeout 60 "$COLLIE" probe env -np 2 -T 5 \
    -J "$W/im.json" > "$W/im.log" 2>&1 || { show "$W/im.log"; fail "probe env -np 2 with COLLIE_INIT_METHOD"; }
  [ "$(json "$W/im.json" "j['world_size']")" = 2 ] || fail "COLLIE_INIT_METHOD JSON: $(head -c 300 "$W/im.json")"
  # Every probe runs under the same flags.
  timeout 60 "$COLLIE" probe stragglers -np 2 --coll-iters 10 -T 5 -J "$W/st.json" \
    > "$W/st.log" 2>&1 || { show "$W/st.log"; fail "stragglers -np 2"; }
  timeout 60 "$COLLIE" probe env -np 2 -T 5 -J "$W/env.json" \
    > "$W/env.log" 2>&1 || { show "$W/env.log"; fail "env -np 2"; }
  [ "$(json "$W/st.json" "j['probe']") $(json "$W/env.json" "j['probe']")" = "stragglers env" ] ||
    fail "stragglers/env JSON"
  ;;
mpirun)
  [ -n "$MPIRUN" ] && [ -x "$MPIRUN" ] || skip "this build has no MPI backend"
  mpi=("$MPIRUN" --allow-run-as-root --oversubscribe -np 3 --mca btl self,vader,tcp
       --mca mpi_yield_when_idle 1)
  timeout 90 "${mpi[@]}" "$COLLIE" probe connectivity --backend mpi -T 5 -J "$W/mpi.json" \
    > "$W/mpi.log" 2>&1 || { show "$W/mpi.log"; fail "connectivity --backend mpi under mpirun"; }
  expect "$W/mpi.log" "OK: all 3 pairs reachable" "mpi connectivity"
  [ "$(json "$W/mpi.json" "j['world_size']")" = 3 ] || fail "mpi JSON"
  local_spec "$W/spec.yaml"
  timeout 90 "${mpi[@]}" "$COLLIE" accept --backend mpi --spec "$W/spec.yaml" \
    -J "$W/mpi_accept.json" > "$W/mpi_accept.log" 2>&1 ||
    { show "$W/mpi_accept.log"; fail "accept --backend mpi under mpirun"; }
  expect "$W/mpi_accept.log" "ACCEPTED: all 4 checks passed" "accept over mpi"
  [ "$(json "$W/mpi_accept.json" "j['backend']")" = mpi ] || fail "accept JSON names the backend"
  # Gloo under mpirun: ranks come from Open MPI's variables, the store from env://.
  timeout 90 "${mpi[@]}" -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$(port)" \
    "$COLLIE" probe env -T 5 > "$W/gloo.log" 2>&1 || { show "$W/gloo.log"; fail "gloo under mpirun"; }
  expect "$W/gloo.log" "^# env: 3 ranks" "gloo env probe under mpirun"
  ;;
flags)
  # Each bad flag: exit 2, exactly one stderr line, the same message collie perf gives.
  check() {  # check "FLAGS" MESSAGE
    for cmd in "probe env" "accept --spec $SRC/docs/accept-spec.yaml" "perf -b 8 -e 8"; do
      rc=0
      # shellcheck disable=SC2086
      timeout 30 "$COLLIE" $cmd -np 2 $1 > "$W/out" 2> "$W/err" || rc=$?
      [ "$rc" = 2 ] || fail "collie $cmd $1: exit $rc, expected 2"
      [ "$(wc -l < "$W/err")" = 1 ] || { show "$W/err"; fail "collie $cmd $1: not one stderr line"; }
      grep -qF -- "$2" "$W/err" || { show "$W/err"; fail "collie $cmd $1: message"; }
    done
  }
  check "--backend foo" "--backend must be gloo, mpi or nccl"
  check "--debug-port 70000" "--debug-port must be a port in 0..65535"
  check "-T -1" "-T '-1' is not a timeout"
  check "--backend mpi" "--backend mpi runs under mpirun: mpirun -np N collie"
  # An sbatch script or salloc shell (a Slurm job, no job step): every command refuses to start
  # local ranks on the batch node and names the srun line (perf did; probe and accept started
  # ranks there until issue 19).
  for cmd in "probe env" "accept --spec $SRC/docs/accept-spec.yaml" "perf -b 8 -e 8"; do
    rc=0
    # shellcheck disable=SC2086
    SLURM_JOB_ID=4242 timeout 30 "$COLLIE" $cmd -np 2 -T 5 > "$W/out" 2> "$W/err" || rc=$?
    [ "$rc" = 2 ] || { show "$W/err"; fail "collie $cmd in a Slurm allocation: exit $rc"; }
    [ "$(wc -l < "$W/err")" = 1 ] || { show "$W/err"; fail "collie $cmd in Slurm: not one line"; }
    grep -qF -- "inside Slurm job 4242 but not in a job step; run the ranks with srun: srun -n 2 collie ${cmd%% *}" "$W/err" ||
      { show "$W/err"; fail "collie $cmd in Slurm: message"; }
    [ ! -s "$W/out" ] || fail "collie $cmd in Slurm wrote to stdout"
  done
  rc=0
  timeout 30 "$COLLIE" launch -np 2 -- "$COLLIE" probe env -np 3 > "$W/out" 2> "$W/err" || rc=$?
  [ "$rc" = 2 ] || fail "-np 3 under a 2-rank launcher: exit $rc"
  expect "$W/err" "-np 3 but the env launcher started 2 ranks" "-np mismatch message"
  ;;
accept)
  local_spec "$W/spec.yaml"
  spec="$W/spec.yaml"
  timeout 90 "$COLLIE" accept --spec "$spec" -np 3 -J "$W/a.json" --md "$W/a.md" \
    --junit "$W/a.xml" --html "$W/a.html" > "$W/a.log" 2>&1 ||
    { show "$W/a.log"; fail "the sample spec rejected 3 healthy local ranks"; }
  expect "$W/a.log" "^ACCEPTED: all 4 checks passed" "no ACCEPTED line"
  expect "$W/a.log" "^PASS perf all_reduce" "the perf check did not run"
  xmllint --noout --schema "$SRC/tests/reports/report_junit.xsd" "$W/a.xml" ||
    fail "accept JUnit does not validate"
  [ "$(json "$W/a.json" "len([c for c in j['checks'] if c['kind'] == 'perf'][0]['rows'])")" = 3 ] ||
    fail "the JSON report lacks the perf rows (256K, 512K, 1M)"
  expect "$W/a.md" "^\| perf all_reduce \| perf \| pass \|" "Markdown summary row"
  expect "$W/a.html" 'class="plot busbw-plot"' "HTML perf chart"

  # A test-only hook without the test switch: refused before any rank starts, one line, exit 2.
  rc=0
  COLLIE_PERF_TEST_DELAY_US=150000 timeout 30 "$COLLIE" accept --spec "$spec" -np 3 \
    > "$W/hook.out" 2> "$W/hook.err" || rc=$?
  [ "$rc" = 2 ] || { show "$W/hook.err"; fail "unswitched test hook: exit $rc, expected 2"; }
  [ "$(wc -l < "$W/hook.err")" = 1 ] || { show "$W/hook.err"; fail "hook refusal is not one line"; }
  expect "$W/hook.err" "COLLIE_PERF_TEST_DELAY_US is a test-only hook" "hook refusal message"

  # Wrong data on rank 1: rejected, every size named with the rank; every rank exits 1.
  # The active hook is announced once, by rank 0.
  rc=0
  COLLIE_ENABLE_TEST_HOOKS=1 COLLIE_PERF_TEST_CORRUPT=1:0 timeout 90 "$COLLIE" accept --spec "$spec" -np 3 \
    > "$W/bad.log" 2>&1 || rc=$?
  [ "$rc" = 1 ] || { show "$W/bad.log"; fail "corrupted perf data: exit $rc, expected 1"; }
  expect "$W/bad.log" "^FAIL perf all_reduce" "perf check not failed"
  expect "$W/bad.log" "size 256K: 1 wrong elements, first on rank 1 \(" "size/rank not named"
  expect "$W/bad.log" "^REJECTED: 1 of 4 checks failed" "only the perf check should fail"
  [ "$(grep -c "WARNING: test hooks active (COLLIE_PERF_TEST_CORRUPT=1:0)" "$W/bad.log")" = 1 ] ||
    { show "$W/bad.log"; fail "the active test hook was not announced exactly once"; }

  # Relative rule against the first report: a 150 ms delay per call is far beyond any noise.
  cat > "$W/rel.yaml" <<EOF
baseline: $W/a.json
timeout: 5s
checks:
  - perf: all_reduce
    min_bytes: 256K
    max_bytes: 1M
    iters: 3
    rules:
      max_drop_vs_baseline: {busbw: 0.9}
EOF
  rc=0
  COLLIE_ENABLE_TEST_HOOKS=1 COLLIE_PERF_TEST_DELAY_US=150000 timeout 90 "$COLLIE" accept --spec "$W/rel.yaml" -np 3 \
    -J "$W/rel.json" > "$W/rel.log" 2>&1 || rc=$?
  [ "$rc" = 1 ] || { show "$W/rel.log"; fail "slowed sweep vs baseline: exit $rc, expected 1"; }
  # Which sizes cross 90 % depends on how fast the baseline's own rows ran (a loaded run here
  # made a.json's 1M row slow, and only 512K crossed): any size, named with its drop.
  expect "$W/rel.log" "size (256K|512K|1M): busbw@\1 fell [0-9]+% below the baseline" "size not named"
  [ "$(json "$W/rel.json" "j['passed']")" = False ] || fail "JSON report should say rejected"

  # Rank 0 stuck in a perf step past -T plus the perf watchdog's grace (as with a backend that
  # ignores its deadline): the watchdog ends the process, but the reports say which check hung
  # and which were not run, and the exit status is 1 (rejected).
  cat > "$W/hang.yaml" <<EOF
timeout: 1s
checks:
  - probe: env
    rules:
      consistent: true
      ignore: [env.NCCL_DEBUG*]
  - perf: all_reduce
    min_bytes: 8
    max_bytes: 8
    iters: 2
    rules:
      min_busbw_gbps: {8: 0}
  - probe: connectivity
    rules:
      all_reachable: true
EOF
  rc=0
  COLLIE_ENABLE_TEST_HOOKS=1 COLLIE_PERF_TEST_DELAY_US=0:6000000 timeout 60 "$COLLIE" accept --spec "$W/hang.yaml" -np 2 \
    -J "$W/hang.json" --junit "$W/hang.xml" > "$W/hang.log" 2>&1 || rc=$?
  [ "$rc" = 1 ] || { show "$W/hang.log"; fail "hung perf step: exit $rc, expected 1"; }
  expect "$W/hang.log" "^PASS env" "the check before the hang is lost"
  expect "$W/hang.log" "rule broken: hung: \\[Rank 0\\] step 'all_reduce" "the hung check not named"
  expect "$W/hang.log" "not run: an earlier check hung" "the check after the hang not listed"
  [ "$(json "$W/hang.json" "[c['passed'] for c in j['checks']]")" = "[True, False, False]" ] ||
    fail "hang JSON report: $(cat "$W/hang.json")"
  xmllint --noout --schema "$SRC/tests/reports/report_junit.xsd" "$W/hang.xml" ||
    fail "hang JUnit does not validate"

  # Unusable YAML: exit 2, one line naming file, line and key; no rank is started.
  printf 'checks:\n  - perf: all_reduce\n    rules:\n      min_busbw_gbps: {64M: 1}\n      floor: 2\n' \
    > "$W/bad.yaml"
  rc=0
  timeout 30 "$COLLIE" accept --spec "$W/bad.yaml" > "$W/out" 2> "$W/err" || rc=$?
  [ "$rc" = 2 ] || fail "bad YAML spec: exit $rc"
  [ "$(wc -l < "$W/err")" = 1 ] || { show "$W/err"; fail "bad YAML spec: not one line"; }
  expect "$W/err" "bad.yaml:5: checks\[0\] \('perf all_reduce'\)\.rules: unknown key 'floor'" \
    "YAML error without file:line:key"
  ;;
healthy)
  # A healthy local job names nothing, run after run (issue 18: one noisy measurement used to
  # name "SLOW LINK"s): 4 ranks stand in for 4 hosts, the quick schedule, 3 times in a row, then
  # the full schedule once. Every run: exit 0, verdict OK, no host or link named.
  for run in 1 2 3 full; do
    sched=quick
    [ "$run" = full ] && sched=full
    rc=0
    timeout 60 "$COLLIE" probe pairwise -np 4 -T 5 --schedule $sched -J "$W/h$run.json" \
      > "$W/h$run.log" 2>&1 || rc=$?
    [ "$rc" = 0 ] || { show "$W/h$run.log"; fail "healthy run $run ($sched): exit $rc"; }
    if grep -qE "^(SLOW|DEAD|FLAPPING) (LINK|HOST)" "$W/h$run.log"; then
      show "$W/h$run.log"
      fail "healthy run $run named a link or host"
    fi
    expect "$W/h$run.log" "^OK: nothing named" "healthy run $run: no OK line"
    [ "$(json "$W/h$run.json" "j['verdict'], len(j['isolation']['findings']), j['isolation']['rounds'] > 0")" = "OK 0 True" ] ||
      fail "healthy run $run JSON: $(head -c 400 "$W/h$run.json")"
  done
  rc=0
  timeout 30 "$COLLIE" probe pairwise -np 2 --schedule all > "$W/out" 2> "$W/err" || rc=$?
  [ "$rc" = 2 ] || fail "--schedule all: exit $rc, expected 2"
  rc=0
  timeout 30 "$COLLIE" probe pairwise -np 2 --confirm 0 > "$W/out" 2> "$W/err" || rc=$?
  [ "$rc" = 2 ] || fail "--confirm 0: exit $rc, expected 2"
  [ "$(wc -l < "$W/err")" = 1 ] || { show "$W/err"; fail "--confirm 0: not one stderr line"; }
  ;;
*) fail "unknown case '$CASE'" ;;
esac
echo "PASS: $CASE"
