#!/usr/bin/env bash
# collie perf -I names the rank that keeps the others waiting, both ways (docs/evidence.md).
#   slow:    2 ranks on 2 CPUs (rank r bound to the r-th), every rank doing the same fixed CPU
#            work before each call (COLLIE_PERF_TEST_WORK, as a training step computes between
#            collectives) and a busy loop pinned with taskset to rank 1's CPU: the table names
#            rank 1 and nobody else, the -J summary too, and `collie evidence` says STRAGGLER
#            rank 1.
#   healthy: the same runs without the busy loop, RUNS times (default 20): nobody is named. A run
#            that names a rank whose CPU the hypervisor took away (steal, /proc/stat) for 5 % or
#            more of the run is not a healthy run: it is reported and run again, at most 10 times
#            in all (a rank that lost its core for that long is the last to arrive, rightly).
# Usage: arrival_skew_test.sh COLLIE CASE [RUNS]
set -u
COLLIE=$1
CASE=$2
RUNS=${3:-20}
. "$(dirname "$0")/../support/skip.sh"

# The first two CPUs this process may use: collie perf -np 2 binds rank 0 to the first and
# rank 1 to the second when it is started on just those two.
mapfile -t cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0))[:2], sep="\n")')
[ "${#cpus[@]}" -ge 2 ] || skip "needs 2 CPUs (this process may use ${#cpus[@]})"
command -v taskset >/dev/null || skip "taskset not installed"

W=$(mktemp -d)
BUSY=
cleanup() {
  [ -n "$BUSY" ] && kill "$BUSY" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

# 100 units: about 2 ms of work per call on an idle core; the busy loop halves rank 1's share.
run() {
  COLLIE_ENABLE_TEST_HOOKS=1 COLLIE_PERF_TEST_WORK=100 timeout 300 \
    taskset -c "${cpus[0]},${cpus[1]}" "$COLLIE" perf -np 2 -I 1 -b 1K -e "$2" -f 4 -n 20 -w 2 \
    -J "$W/$1.json" >"$W/$1.txt" 2>&1 || {
    cat "$W/$1.txt"
    fail "collie perf exited $?"
  }
  grep -q "^# Arrival skew (-I)" "$W/$1.txt" || {
    cat "$W/$1.txt"
    fail "no arrival block in the -I table"
  }
}

# The ranks the -J summary names, "arrival cpu" lists ("1 -" = rank 1 by arrival, none by CPU).
named() {
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]
print(",".join(map(str,s["arrival_stragglers"])) or "-", ",".join(map(str,s["cpu_stragglers"])) or "-")' "$1"
}

case $CASE in
  slow)
    # At a higher priority where allowed (root), so that on a machine other jobs load the busy
    # loop still takes most of that core, not just one share among many.
    boost=()
    nice -n -10 true 2>/dev/null && boost=(nice -n -10)
    "${boost[@]}" taskset -c "${cpus[1]}" bash -c 'while :; do :; done' &
    BUSY=$!
    run slow 16K
    kill "$BUSY"
    BUSY=
    got=$(named "$W/slow.json")
    case $got in
      "1 -" | "- 1" | "1 1") ;;
      *)
        cat "$W/slow.txt"
        fail "the -J summary names '$got' (arrival, cpu), not rank 1 alone"
        ;;
    esac
    grep -q "^# Straggler by \(arrival\|CPU\): rank 1 " "$W/slow.txt" || {
      cat "$W/slow.txt"
      fail "the table does not name rank 1"
    }
    ! grep -q "^# Straggler by \(arrival\|CPU\): rank 0 " "$W/slow.txt" || fail "rank 0 named"
    "$COLLIE" evidence "$W/slow.json" >"$W/evidence.txt"
    [ $? = 1 ] || fail "collie evidence did not report a finding"
    grep -q "^STRAGGLER rank 1 (" "$W/evidence.txt" || {
      cat "$W/evidence.txt"
      fail "collie evidence does not name rank 1"
    }
    grep "^# Straggler by" "$W/slow.txt"
    echo "PASS: rank 1 (busy loop on CPU ${cpus[1]}) named"
    ;;
  healthy)
    # steal CPU: the hypervisor's steal ticks (USER_HZ) of CPU so far.
    steal() { awk -v c="cpu$1" '$1 == c { print $9 }' /proc/stat; }
    hz=$(getconf CLK_TCK)
    judged=0 excused=0 attempt=0
    while [ "$judged" -lt "$RUNS" ]; do
      attempt=$((attempt + 1))
      s0=$(steal "${cpus[0]}") s1=$(steal "${cpus[1]}") t0=$(date +%s%N)
      run "healthy$attempt" 4K
      ms=$((($(date +%s%N) - t0) / 1000000))
      st=("$((($(steal "${cpus[0]}") - s0) * 1000 / hz))" "$((($(steal "${cpus[1]}") - s1) * 1000 / hz))")
      got=$(named "$W/healthy$attempt.json")
      if [ "$got" = "- -" ]; then
        judged=$((judged + 1))
        continue
      fi
      # The ranks it names (by arrival or CPU); each is bound to cpus[rank].
      stolen=1
      for r in $(echo "$got" | tr ' ,' '\n\n' | grep -v -- - | sort -u); do
        [ $((st[r] * 20)) -ge "$ms" ] || stolen=0
      done
      if [ $stolen = 0 ] || [ $excused -ge 10 ]; then
        cat "$W/healthy$attempt.txt"
        fail "healthy run $attempt names '$got' (arrival, cpu); steal on CPUs ${cpus[0]},${cpus[1]}: ${st[0]},${st[1]} ms of $ms ms; $excused run(s) excused for steal before it"
      fi
      excused=$((excused + 1))
      echo "run $attempt named '$got' (arrival, cpu) while the hypervisor took ${st[0]},${st[1]} ms of $ms ms from CPUs ${cpus[0]},${cpus[1]}: not a healthy run, run again"
    done
    echo "PASS: $RUNS healthy runs named nobody ($excused more named a rank whose CPU was stolen)"
    ;;
  *) fail "unknown case '$CASE' (slow or healthy)" ;;
esac
