// TscClock (core/tsc_clock.h): readings follow CLOCK_MONOTONIC closely, never go back on any
// thread, take the fast path nearly always, and the clock is used only where the kernel trusts
// the counter.
#include "core/tsc_clock.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "core/clock.h"

namespace collie {
namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

TEST(TscClock, UsedOnlyWhereTheKernelTrustsTheCounter) {
  const char* flags = "fpu tsc constant_tsc rdtscp nonstop_tsc tsc_known_freq";
  EXPECT_TRUE(TscClock::usable("tsc\n", flags));
  EXPECT_FALSE(TscClock::usable("kvm-clock\n", flags));
  EXPECT_FALSE(TscClock::usable("hpet", flags));
  EXPECT_FALSE(TscClock::usable("tsc", "fpu tsc rdtscp nonstop_tsc"));  // rate may change
  EXPECT_FALSE(TscClock::usable("tsc", "fpu tsc constant_tsc"));        // stops in deep sleep
  EXPECT_FALSE(TscClock::usable("tsc", "fpu tsc xconstant_tsc nonstop_tsc"));
}

// Readings bracketed by two steady_clock reads fall between them, give or take the clock's
// error (tens of nanoseconds here; under 5 us whatever the load), over 300 ms
// and so across 15 anchors. Runs on any machine: a clock that cannot use the counter is built
// here anyway, and then its readings are CLOCK_MONOTONIC's.
TEST(TscClock, FollowsTheMonotonicClockAcrossAnchors) {
  TscClock clock;
  int64_t worst = 0;
  int64_t last = 0;
  const int64_t end = steady_ns() + 300'000'000;
  uint64_t reads = 0;
  for (int64_t before = steady_ns(); before < end; before = steady_ns()) {
    const int64_t t = clock.now_ns();
    const int64_t after = steady_ns();
    if (reads > 100000) worst = std::max({worst, before - t, t - after});
    ASSERT_GE(t, last) << "went back by " << last - t << " ns at reading " << reads;
    last = t;
    ++reads;
  }
  EXPECT_LT(worst, 5'000) << "ns off CLOCK_MONOTONIC";
  std::printf(
      "%llu readings, %llu anchors, %llu of CLOCK_MONOTONIC; worst %lld ns outside the "
      "steady_clock reads around it\n",
      static_cast<unsigned long long>(reads), static_cast<unsigned long long>(clock.anchors()),
      static_cast<unsigned long long>(clock.slow_reads()), static_cast<long long>(worst));
  EXPECT_GE(clock.anchors(), 10u);
  EXPECT_LT(clock.slow_reads(), reads / 100) << "of " << reads << " readings";
}

TEST(TscClock, NoThreadSeesItGoBack) {
  TscClock clock;
  std::vector<std::thread> threads;
  std::vector<int64_t> back(4, 0);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      int64_t last = 0;
      const int64_t end = steady_ns() + 200'000'000;
      while (steady_ns() < end) {
        const int64_t t = clock.now_ns();
        back[i] = std::max(back[i], last - t);
        last = t;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) EXPECT_LE(back[i], 0) << "thread " << i;
}

// The system clock is steady_clock's time, whichever way it reads it.
TEST(TscClock, TheSystemClockReadsSteadyClocksTime) {
  for (int i = 0; i < 1000; ++i) {
    const auto before = std::chrono::steady_clock::now();
    const auto t = Clock::system().now();
    const auto after = std::chrono::steady_clock::now();
    EXPECT_GE(t - before, std::chrono::microseconds(-20));
    EXPECT_LE(t - after, std::chrono::microseconds(20));
  }
  if (TscClock::get() == nullptr) {
    GTEST_SKIP() << "this machine's clocksource or CPU flags rule the time-stamp counter out: "
                    "the system clock reads steady_clock";
  }
}

}  // namespace
}  // namespace collie
