#!/usr/bin/env bash
# `collie analyze` on dumps requested from a running job, both ways (issue 26):
#   healthy  `collie perf -np 2 --debug-port P` runs; POST /v1/dump N times (and SIGUSR1 to a
#            rank between two POSTs): every request writes a fresh dump (its dump_time_ns
#            moves), and `collie analyze DUMPDIR` finds nothing every time (exit 0, no culprit);
#            it used to name rank 1 ("Not all ranks joining collective") from snapshots a few
#            milliseconds apart, and a second POST left the first dump in place.
#   frozen   the same job with rank 1 stopped (SIGSTOP) mid-run and a long -T (no failure dump):
#            a POST 3 s later makes rank 0 dump; analyze names rank 1 (it left no fresh dump)
#            and rank 0 stalled in the op rank 1 never finished; exit 1, never "No problem".
#   usage: analyze_snapshot_test.sh COLLIE_BINARY CASE [REPEATS]
set -u
COLLIE=${1:?collie binary}
CASE=${2:?case}
REPEATS=${3:-20}
WORK=$(mktemp -d /tmp/collie_snapshot.XXXXXX)
LPID=""
STOPPED=""
cleanup() {
  [ -n "$STOPPED" ] && kill -CONT "$STOPPED" 2>/dev/null
  [ -n "$LPID" ] && kill -KILL "$LPID" 2>/dev/null
  pkill -KILL -P "$LPID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "----- job -----"; tail -20 "$WORK/job.log"; exit 1; }

source "$(dirname "$0")/../support/free_ports.sh"
port=$(free_ports 2) || exit 1  # rank r's debug server listens on port + r
mkdir -p "$WORK/dumps"
T=60
[ "$CASE" = healthy ] && T=30
COLLIE_FR_DUMP_DIR="$WORK/dumps" "$COLLIE" perf -np 2 -b 4K -e 64K -f 4 -n 50 -N 0 -T $T \
  --debug-port "$port" >"$WORK/job.log" 2>&1 &
LPID=$!
disown "$LPID"  # cleanup kills it; no "Killed" line from the shell
for _ in $(seq 200); do
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && curl -sf "http://127.0.0.1:$((port + 1))/healthz" >/dev/null && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || fail "rank 0's debug server never answered"
# Rows flowing: the job is past its set-up.
for _ in $(seq 200); do
  [ "$(grep -c '^ *[0-9]' "$WORK/job.log")" -ge 2 ] && break
  sleep 0.1
done

dump_time() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dump_time_ns"])' "$1" 2>/dev/null || echo 0; }
# request: POST /v1/dump and wait until every rank in "$@" wrote a newer dump than before.
request() {
  local before=() r i
  for r in "$@"; do before+=("$(dump_time "$WORK/dumps/collie_fr_rank_$r.json")"); done
  curl -sf -X POST -H "X-Collie-Request: 1" "http://127.0.0.1:$port/v1/dump" >/dev/null || fail "POST /v1/dump failed"
  for _ in $(seq 100); do
    i=0
    local fresh=1
    for r in "$@"; do
      [ "$(dump_time "$WORK/dumps/collie_fr_rank_$r.json")" -gt "${before[$i]}" ] || fresh=0
      i=$((i + 1))
    done
    [ $fresh = 1 ] && return 0
    sleep 0.05
  done
  fail "a POST /v1/dump did not write a fresh dump on ranks $* (the old one was kept)"
}
rank_pid() {  # the launcher's child whose environment says RANK=$1
  local c
  for c in $(pgrep -P "$LPID"); do
    tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | grep -qx "RANK=$1" && { echo "$c"; return; }
  done
}

case "$CASE" in
healthy)
  for i in $(seq "$REPEATS"); do
    request 0 1
    if [ "$i" = 3 ]; then  # SIGUSR1 to rank 1, then a POST: both write
      before=$(dump_time "$WORK/dumps/collie_fr_rank_1.json")
      kill -USR1 "$(rank_pid 1)"
      for _ in $(seq 100); do
        [ "$(dump_time "$WORK/dumps/collie_fr_rank_1.json")" -gt "$before" ] && break
        sleep 0.05
      done
      [ "$(dump_time "$WORK/dumps/collie_fr_rank_1.json")" -gt "$before" ] || fail "SIGUSR1 wrote no fresh dump"
      request 0 1
    fi
    rc=0
    "$COLLIE" analyze "$WORK/dumps" >"$WORK/analyze.$i.txt" 2>&1 || rc=$?
    if [ $rc != 0 ] || grep -q "Culprit rank" "$WORK/analyze.$i.txt"; then
      cat "$WORK/analyze.$i.txt"
      fail "analyze of healthy snapshot $i: exit $rc"
    fi
  done
  cat "$WORK/analyze.$REPEATS.txt"
  grep -q "Note: dumps taken .* ms apart" "$WORK/analyze.$REPEATS.txt" || fail "the dumps' distance is not stated"
  echo "PASS: $REPEATS requested snapshots of a healthy job, none blamed a rank"
  ;;
frozen)
  STOPPED=$(rank_pid 1)
  [ -n "$STOPPED" ] || fail "rank 1 not found"
  kill -STOP "$STOPPED"
  sleep 3
  request 0
  rc=0
  "$COLLIE" analyze "$WORK/dumps" >"$WORK/analyze.txt" 2>&1 || rc=$?
  cat "$WORK/analyze.txt"
  [ $rc = 1 ] || fail "analyze exit $rc on a job with a frozen rank (expected 1)"
  grep -q "No problem found" "$WORK/analyze.txt" && fail "a frozen rank read 'No problem found'"
  grep -q "^Culprit rank: 1$" "$WORK/analyze.txt" || fail "rank 1 is not the one culprit"
  grep -qE "rank 0 (on host [^ ]+ )?is in [a-z_]+ #[0-9]+ of group 0 \(state [a-z]+\) for [0-9.]+ s" "$WORK/analyze.txt" ||
    fail "rank 0's wait is not reported"
  echo "PASS: the frozen rank is named"
  ;;
*) fail "unknown case $CASE" ;;
esac
