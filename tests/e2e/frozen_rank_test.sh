#!/usr/bin/env bash
# A rank frozen with SIGSTOP in `collie perf -np 4 -T 8`: the other ranks name it at the deadline,
# write their flight-recorder dumps, and the whole job (the local launcher included) has exited
# within T + 5 s of the freeze, the frozen rank killed with it.
#   usage: frozen_rank_test.sh COLLIE_BINARY
# Exit: 0 pass, 1 fail.
set -u
COLLIE=${1:?collie binary}
T=8
WORK=$(mktemp -d /tmp/collie_frozen.XXXXXX)
LPID=""
cleanup() {
  [ -n "$LPID" ] && kill -KILL "$LPID" 2>/dev/null
  [ -n "${FROZEN:-}" ] && kill -KILL "$FROZEN" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "----- output -----"; cat "$WORK/out.log"; exit 1; }

mkdir -p "$WORK/dumps"
COLLIE_FR_DUMP_DIR="$WORK/dumps" "$COLLIE" perf -np 4 -T $T -b 1K -e 1K -n 200 -w 1 -N 0 \
  >"$WORK/out.log" 2>&1 &
LPID=$!
# Rank 2: the launcher's child whose environment says RANK=2, once rows are flowing.
FROZEN=""
for _ in $(seq 300); do
  if [ "$(grep -c '^ *1024' "$WORK/out.log" 2>/dev/null)" -ge 2 ]; then
    for c in $(pgrep -P "$LPID"); do
      if tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | grep -qx RANK=2; then FROZEN=$c; fi
    done
    [ -n "$FROZEN" ] && break
  fi
  sleep 0.1
done
[ -n "$FROZEN" ] || fail "the job did not start rows (or rank 2 was not found)"
kill -STOP "$FROZEN"
frozen_at=$(date +%s.%N)
limit=$((T + 5))
for _ in $(seq $((limit * 10 + 50))); do
  kill -0 "$LPID" 2>/dev/null || break
  sleep 0.1
done
wait "$LPID"
rc=$?
LPID=""
took=$(echo "$(date +%s.%N) - $frozen_at" | bc)
echo "job exited with status $rc, $took s after the freeze (limit $limit s)"
[ "$rc" != 0 ] || fail "the job exited 0 with a frozen rank"
if [ "$(echo "$took > $limit" | bc)" = 1 ]; then fail "the job took $took s after the freeze (> $limit s)"; fi
kill -0 "$FROZEN" 2>/dev/null && fail "the frozen rank $FROZEN is still alive"
FROZEN=""
grep -qE "rank 2 (did not answer|is still|has only)" "$WORK/out.log" || fail "no rank names the frozen rank 2"
grep -oE "rank 2 (did not answer|is still|has only)[^;]*" "$WORK/out.log" | head -1
for r in 0 1 3; do
  [ -s "$WORK/dumps/collie_fr_rank_$r.json" ] || fail "no flight-recorder dump from rank $r in $(ls "$WORK/dumps")"
done
echo "dumps: $(ls "$WORK/dumps" | tr '\n' ' ')"
echo "PASS"
