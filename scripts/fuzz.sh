#!/usr/bin/env bash
# Runs each libFuzzer target (tests/fuzz/fuzz_*.cpp) for a bounded time over its kept corpus
# tests/fuzz/corpus/<name>/. The targets come from the sanitizer stage's clang build
# ${COLLIE_FUZZ_BUILD_DIR:-build-san} (ASan + UBSan; scripts/sanitize.sh builds it).
#   scripts/fuzz.sh [SECONDS_PER_TARGET (default 60)] [fuzz_TARGET ...]
# New inputs go to a scratch directory (the kept corpus is only read) unless COLLIE_FUZZ_MERGE=1,
# which merges the interesting ones into the kept corpus afterwards. A crash, leak, timeout or
# sanitizer report fails the script (exit 1) and leaves the input in $BUILD/fuzz-artifacts/;
# reproduce with `$BUILD/tests/fuzz/fuzz_<name> $BUILD/fuzz-artifacts/fuzz_<name>-crash-...`.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
[ $# -gt 0 ] && shift
case "$secs" in ''|*[!0-9]*) echo "fuzz.sh: SECONDS_PER_TARGET must be a whole number, got '$secs'" >&2; exit 2;; esac
BUILD="${COLLIE_FUZZ_BUILD_DIR:-build-san}"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi
COLLIE_SAN_BUILD_DIR="$BUILD" bash scripts/sanitize.sh --build-only fuzz

mkdir -p "$BUILD/fuzz-artifacts"
# One line per target for the CI summary (scripts/ci_summary.py): "NAME clean RUNS" or
# "NAME FAIL WHAT", WHAT being the sanitizer's or libFuzzer's first report line.
results="$BUILD/fuzz-artifacts/results.txt"
: >"$results"
status=0
for t in "${targets[@]}"; do
  name="${t#fuzz_}"
  corpus="tests/fuzz/corpus/$name"
  mkdir -p "$corpus"
  scratch="$(mktemp -d)"
  echo "== $t: ${secs}s over $corpus ($(ls "$corpus" | wc -l) kept inputs)"
  if ! "$BUILD/tests/fuzz/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$BUILD/fuzz-artifacts/$t-" "$scratch" "$corpus" \
      2>"$BUILD/fuzz-artifacts/$t.log"; then
    echo "FAIL $t: see $BUILD/fuzz-artifacts/$t.log and $BUILD/fuzz-artifacts/$t-*" >&2
    tail -30 "$BUILD/fuzz-artifacts/$t.log" >&2
    what="$(grep -m1 -E "^SUMMARY: |ERROR: libFuzzer|runtime error:" "$BUILD/fuzz-artifacts/$t.log" \
      | sed -E 's/^SUMMARY: //' | cut -c1-200 || true)"
    echo "$t FAIL ${what:-exited non-zero without a report (see the log)}" >>"$results"
    status=1
  else
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|cov:" "$BUILD/fuzz-artifacts/$t.log" \
      | tail -3 || true
    runs="$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$BUILD/fuzz-artifacts/$t.log")"
    echo "$t clean ${runs:-?}" >>"$results"
  fi
  if [ "${COLLIE_FUZZ_MERGE:-0}" = 1 ]; then
    "$BUILD/tests/fuzz/$t" -merge=1 "$corpus" "$scratch" 2>/dev/null || true
  fi
  rm -rf "$scratch"
done
exit $status
