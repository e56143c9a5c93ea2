#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/fuzz_*.cpp) with clang in ${COLLIE_FUZZ_BUILD_DIR:-build-fuzz}
# and runs each for a bounded time over its kept corpus tests/fuzz/corpus/<name>/.
#   scripts/fuzz.sh [SECONDS_PER_TARGET (default 60)] [fuzz_TARGET ...]
# New inputs go to a scratch directory (the kept corpus is only read) unless COLLIE_FUZZ_MERGE=1,
# which merges the interesting ones into the kept corpus afterwards. A crash, leak, timeout or
# sanitizer report fails the script (exit 1) and leaves the input in $BUILD/fuzz-artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
[ $# -gt 0 ] && shift
case "$secs" in ''|*[!0-9]*) echo "fuzz.sh: SECONDS_PER_TARGET must be a whole number, got '$secs'" >&2; exit 2;; esac
BUILD="${COLLIE_FUZZ_BUILD_DIR:-build-fuzz}"
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (apt install clang libclang-rt-dev)" >&2; exit 2; }

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  command -v ccache >/dev/null && gen+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S . -B "$BUILD" "${gen[@]}" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLLIE_FUZZ=ON >/dev/null
fi
cmake --build "$BUILD" --target "${targets[@]}"

mkdir -p "$BUILD/fuzz-artifacts"
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
    status=1
  else
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|cov:" "$BUILD/fuzz-artifacts/$t.log" \
      | tail -3 || true
  fi
  if [ "${COLLIE_FUZZ_MERGE:-0}" = 1 ]; then
    "$BUILD/tests/fuzz/$t" -merge=1 "$corpus" "$scratch" 2>/dev/null || true
  fi
  rm -rf "$scratch"
done
exit $status
