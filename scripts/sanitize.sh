#!/usr/bin/env bash
# The sanitizer and fuzzing stage (issue 17); scripts/test.sh runs it after the main suite.
#   scripts/sanitize.sh [--build-only] [asan|fuzz|tsan|all]   (default all = asan, fuzz, tsan)
#   asan  one clang build in ${COLLIE_SAN_BUILD_DIR:-build-san} with ASan + UBSan, also
#         instrumented for libFuzzer (COLLIE_FUZZ=ON); runs every ctest test labelled `sanitize`.
#   fuzz  each libFuzzer target of that same build for ${COLLIE_FUZZ_SECONDS:-30} s over its kept
#         corpus (scripts/fuzz.sh).
#   tsan  a TSan build in ${COLLIE_TSAN_BUILD_DIR:-build-tsan} of the same tests; runs them.
# Only the library and the `sanitize` tests are built (target collie_sanitize_tests), at -O1 -g1.
# Both builds are configured with CMakePresets.json's presets asan and tsan (-S . -B DIR).
# Every process the tests start inherits the *SAN_OPTIONS below, which write any report to
# $BUILD/sanitizer-reports/; one report there fails the stage even if its test passed (a child
# process that a test expected to fail). Suppressions: tests/sanitizers/*.supp (third-party only).
# Exit 0 clean; 1 on a report, a failing test, or when the stage cannot run here (no clang or no
# sanitizer runtime: it never skips silently); 2 on bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
if [ "${1:-}" = --build-only ]; then build_only=1; shift; fi
which="${1:-all}"
case "$which" in asan|fuzz|tsan|all) ;; *)
  echo "sanitize.sh: expected asan, fuzz, tsan or all, got '$which'" >&2; exit 2;; esac
SAN_DIR="${COLLIE_SAN_BUILD_DIR:-build-san}"
TSAN_DIR="${COLLIE_TSAN_BUILD_DIR:-build-tsan}"
SUPP="$PWD/tests/sanitizers"
JOBS="${COLLIE_SANITIZE_JOBS:-$(nproc)}"

# Fails loudly when clang or its runtime for `flags` is missing.
check_toolchain() {
  local flags="$1" probe
  command -v clang++ >/dev/null || {
    echo "sanitize.sh: clang++ not found; run scripts/bootstrap.sh (clang libclang-rt-14-dev)" >&2
    exit 1; }
  probe="$(mktemp -d)"
  # Links as a fuzzer when `flags` has fuzzer (libFuzzer brings main), as a program otherwise.
  if [[ "$flags" == *fuzzer* ]]; then
    echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }'
  else
    echo 'int main() { return 0; }'
  fi >"$probe/p.cpp"
  if ! clang++ -fsanitize="$flags" "$probe/p.cpp" -o "$probe/p" 2>"$probe/err"; then
    echo "sanitize.sh: clang++ cannot link -fsanitize=$flags (missing runtime: install" \
         "libclang-rt-14-dev, scripts/bootstrap.sh):" >&2
    cat "$probe/err" >&2; rm -rf "$probe"; exit 1
  fi
  rm -rf "$probe"
}

# build DIR PRESET TARGET...: configures DIR (once) with the CMakePresets.json configure preset
# PRESET (asan, tsan: clang, -O1, COLLIE_SANITIZE, COLLIE_FUZZ), then builds the targets.
build() {
  local dir="$1" preset="$2" start
  shift 2
  start=$(date +%s)
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    local gen=()
    command -v ninja >/dev/null && gen=(-G Ninja)
    command -v ccache >/dev/null && gen+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    cmake --preset "$preset" -S . -B "$dir" "${gen[@]}" >/dev/null
  fi
  cmake --build "$dir" -j"$JOBS" --target "$@"
  echo "sanitize.sh: built $dir ($*) in $(( $(date +%s) - start )) s"
}

# run_tests KIND DIR: the `sanitize` tests; any test failure or report file fails.
run_tests() {
  local kind="$1" dir="$2" start rc=0
  local reports="$PWD/$dir/sanitizer-reports" log="$dir/sanitize-$kind.log"
  local tsan="halt_on_error=1:second_deadlock_stack=1:suppressions=$SUPP/tsan.supp"
  rm -rf "$reports"; mkdir -p "$reports"
  start=$(date +%s)
  echo "== $kind: ctest -L sanitize in $dir"
  ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=1:log_path=$reports/$kind" \
  LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/$kind" \
  TSAN_OPTIONS="$tsan:log_path=$reports/$kind" \
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    ctest --test-dir "$dir" -L '^sanitize$' --output-on-failure -j"$JOBS" \
      --output-junit "ctest-junit-$kind.xml" >"$log" 2>&1 || rc=1
  local summary
  summary="$(grep -E 'tests passed|Total Test time' "$log" | tr '\n' ' ')"
  if [ -n "$(ls -A "$reports")" ]; then
    echo "$kind: sanitizer reports in $reports:" >&2
    for f in "$reports"/*; do echo "--- $f" >&2; head -60 "$f" >&2; done
    rc=1
  fi
  if [ $rc -ne 0 ]; then
    echo "$kind: FAILED ($summary); log: $log" >&2
    grep -E "^ *[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Not Run)" "$log" \
      | head -40 >&2
    return 1
  fi
  echo "$kind: clean: $summary($(( $(date +%s) - start )) s)"
}

status=0
if [ "$which" = asan ] || [ "$which" = fuzz ] || [ "$which" = all ]; then
  check_toolchain address,undefined,fuzzer
  targets=(collie_fuzz_targets)
  [ "$which" != fuzz ] && targets+=(collie_sanitize_tests)
  build "$SAN_DIR" asan "${targets[@]}"
  if [ $build_only = 0 ] && [ "$which" != fuzz ]; then run_tests asan "$SAN_DIR" || status=1; fi
  if [ $build_only = 0 ] && [ "$which" != asan ]; then
    COLLIE_FUZZ_BUILD_DIR="$SAN_DIR" bash scripts/fuzz.sh "${COLLIE_FUZZ_SECONDS:-30}" || status=1
  fi
fi
if [ "$which" = tsan ] || [ "$which" = all ]; then
  check_toolchain thread
  build "$TSAN_DIR" tsan collie_sanitize_tests
  [ $build_only = 0 ] && { run_tests tsan "$TSAN_DIR" || status=1; }
fi
exit $status
