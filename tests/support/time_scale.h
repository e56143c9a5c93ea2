#pragma once
// Wall-clock bounds in tests scale with the build. Sanitized code runs slower (ASan about 2x,
// TSan 5-15x), so a bound that holds in the Release build ("the dump arrives within 500 ms")
// would fail under the sanitizers on instrumentation cost alone. kTimeScale is the factor
// tests/CMakeLists.txt also applies to every ctest TIMEOUT (COLLIE_TEST_TIME_SCALE: 1 Release,
// 2 ASan+UBSan, 4 TSan), defined for every target under tests/. Bounds that measure performance
// rather than "this happens promptly, not after a retry or a tick" belong in scripts/bench/.
// Thread safety: constants and pure functions.
#include <chrono>

#ifndef COLLIE_TEST_TIME_SCALE
#error "COLLIE_TEST_TIME_SCALE is set by tests/CMakeLists.txt for every test target"
#endif

namespace collie::testing {

inline constexpr int kTimeScale = COLLIE_TEST_TIME_SCALE;
static_assert(kTimeScale >= 1, "COLLIE_TEST_TIME_SCALE must be >= 1");

// An upper bound (or wait limit) for this build: d times kTimeScale.
template <typename Rep, typename Period>
constexpr std::chrono::duration<Rep, Period> scaled(std::chrono::duration<Rep, Period> d) {
  return d * kTimeScale;
}
constexpr double scaled(double seconds) { return seconds * kTimeScale; }

}  // namespace collie::testing
