// core/futex.h: a sleep on a word ends when woken, when the word already differs, or at its
// timeout; never later. Bounds are generous (a loaded machine): each check tells apart "returned
// for its reason" from "slept to a far timeout".
#include "core/futex.h"

#include <gtest/gtest.h>

#include <thread>

namespace collie {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

double seconds_since(Steady::time_point t) {
  return std::chrono::duration<double>(Steady::now() - t).count();
}

TEST(Futex, AWakeEndsASleepLongBeforeItsTimeout) {
  std::atomic<uint32_t> word{0};
  double slept = -1;
  std::thread sleeper([&] {
    const auto t = Steady::now();
    while (word.load() == 0) futex_wait(word, 0, 30s);
    slept = seconds_since(t);
  });
  std::this_thread::sleep_for(50ms);  // most likely asleep by now; either way it must return
  word.store(1);
  futex_wake_all(word);
  sleeper.join();
  EXPECT_LT(slept, 10.0) << "the wake did not end the sleep";
}

TEST(Futex, AWordThatAlreadyDiffersReturnsAtOnce) {
  std::atomic<uint32_t> word{7};
  const auto t = Steady::now();
  futex_wait(word, 6, 30s);
  EXPECT_LT(seconds_since(t), 10.0);
}

TEST(Futex, ASleepEndsAtItsTimeoutAndNoEarlierThanItWhenNobodyWakes) {
  std::atomic<uint32_t> word{0};
  const auto t = Steady::now();
  // Spurious returns are allowed: sleep again until the time is up, as callers do.
  for (auto left = 200ms; left > 0ms;) {
    futex_wait(word, 0, left);
    left = 200ms - std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - t);
  }
  const double s = seconds_since(t);
  EXPECT_GE(s, 0.2);
  EXPECT_LT(s, 10.0);
}

TEST(Futex, ANonPositiveTimeoutDoesNotSleep) {
  std::atomic<uint32_t> word{0};
  const auto t = Steady::now();
  futex_wait(word, 0, 0ns);
  futex_wait(word, 0, -5s);
  EXPECT_LT(seconds_since(t), 10.0);
}

}  // namespace
}  // namespace collie
