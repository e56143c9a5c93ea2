#!/usr/bin/env bash
# Runs a `collie perf` job whose rank 1 stops answering once the first row is printed (SIGSTOP,
# as a hung GPU or a stuck host would) and waits for the job to end: the other ranks time out at
# -T, write their flight-recorder dumps (COLLIE_FR_DUMP_DIR) and exit; the frozen rank is killed
# after. Needs only bash, coreutils and grep (it runs inside a bare Debian root in tests/bundle)
# and /proc. Used by scripts/gpu_check.sh and tests/bundle/bundle_test.sh.
#   usage: frozen_rank_job.sh COLLIE [perf arguments: give -np >= 2, -T, -N 0 or enough -n]
#   prints the job's output, then "frozen rank 1: pid P; the job exited S"; exits with the job's
#   status, or 99 when rank 1 was not found running (nothing was frozen)
set -u
collie=${1:?collie binary}
shift
log=$(mktemp /tmp/frozen_rank_job.XXXXXX)
"$collie" perf "$@" >"$log" 2>&1 &
job=$!
frozen=""
for _ in $(seq 600); do
  kill -0 "$job" 2>/dev/null || break
  if grep -Eq '^ +[0-9]+ +[0-9]+ ' "$log"; then  # a table row: every rank is in the loop
    for stat in /proc/[0-9]*/stat; do  # the job's children: its ranks
      read -r pid _ _ ppid _ <"$stat" 2>/dev/null || continue
      [ "$ppid" = "$job" ] || continue
      tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'RANK=1' && frozen=$pid
    done
    [ -n "$frozen" ] && break
  fi
  sleep 0.1
done
[ -n "$frozen" ] && kill -STOP "$frozen"
wait "$job"
rc=$?
[ -n "$frozen" ] && kill -KILL "$frozen" 2>/dev/null
cat "$log"
rm -f "$log"
echo "frozen rank 1: pid ${frozen:-none}; the job exited $rc"
[ -n "$frozen" ] || exit 99
exit "$rc"
