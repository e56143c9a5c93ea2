#!/usr/bin/env bash
# Builds the multi-threaded tests (store, debug_server, comm) under sanitizers and runs them:
#   asan: AddressSanitizer + UndefinedBehaviorSanitizer in ${COLLIE_ASAN_BUILD_DIR:-build-asan}
#   tsan: ThreadSanitizer in ${COLLIE_TSAN_BUILD_DIR:-build-tsan}
#   scripts/sanitize.sh [asan|tsan|all]   (default all)
# Exit 0 when every selected test passes with no sanitizer report, 1 otherwise, 2 on bad usage.
# Not part of .ci/run (slow: two extra full builds of libcollie).
set -euo pipefail
cd "$(dirname "$0")/.."
which="${1:-all}"
case "$which" in asan|tsan|all) ;; *) echo "sanitize.sh: expected asan, tsan or all, got '$which'" >&2; exit 2;; esac

TARGETS=(store_test tcp_store_test tcp_store_security_test file_store_test debug_server_test
         debug_server_security_test rendezvous_test)
# The gtest suites those targets hold (ctest names are Suite.Case).
TESTS='^(AllStores/StoreConformance|PrefixStore|FileStore|TcpStore|TcpStoreAuth|TcpStoreLimits|TcpStoreProtocol|DebugServer|DebugServerSecurity|HttpRequestParser|Rendezvous|StoreBarrier)\.'

run_one() {
  local kind="$1" dir="$2" flags="$3"
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  command -v ccache >/dev/null && gen+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLLIE_SANITIZE="$flags" \
      >/dev/null
  fi
  cmake --build "$dir" --target "${TARGETS[@]}"
  echo "== $kind: running $TESTS"
  local log="$dir/sanitize-$kind.log"
  # halt_on_error: the first report fails the test that caused it.
  if ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
     OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
     ctest --test-dir "$dir" -R "$TESTS" --output-on-failure -j2 --timeout 180 >"$log" 2>&1; then
    echo "$kind: clean ($(grep -c 'Passed' "$log") tests passed)"
    return 0
  fi
  echo "$kind: FAILED; $log:" >&2
  grep -E "Failed|ERROR: (Address|Thread|Leak)Sanitizer|runtime error|WARNING: ThreadSanitizer" \
    "$log" | head -40 >&2
  return 1
}

status=0
if [ "$which" = asan ] || [ "$which" = all ]; then
  run_one asan "${COLLIE_ASAN_BUILD_DIR:-build-asan}" "address,undefined" || status=1
fi
if [ "$which" = tsan ] || [ "$which" = all ]; then
  run_one tsan "${COLLIE_TSAN_BUILD_DIR:-build-tsan}" "thread" || status=1
fi
exit $status
