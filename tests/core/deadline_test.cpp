// core/deadline.h: a deadline as poll's millisecond timeout, at its edges.
#include "core/deadline.h"

#include <gtest/gtest.h>

#include <climits>

namespace collie {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

const Clock::TimePoint kNow{std::chrono::seconds(1000)};

TEST(PollTimeout, PastOrNowIsZero) {
  EXPECT_EQ(poll_timeout_ms(kNow, kNow), 0);
  EXPECT_EQ(poll_timeout_ms(kNow - nanoseconds(1), kNow), 0);
  EXPECT_EQ(poll_timeout_ms(Clock::TimePoint::min(), kNow), 0);
}

TEST(PollTimeout, RoundsUpSoPollNeverReturnsBeforeTheDeadline) {
  EXPECT_EQ(poll_timeout_ms(kNow + nanoseconds(1), kNow), 1);
  EXPECT_EQ(poll_timeout_ms(kNow + microseconds(999), kNow), 1);
  EXPECT_EQ(poll_timeout_ms(kNow + milliseconds(1), kNow), 1);
  EXPECT_EQ(poll_timeout_ms(kNow + milliseconds(5) + nanoseconds(1), kNow), 6);
  EXPECT_EQ(poll_timeout_ms(kNow + milliseconds(250), kNow), 250);
}

TEST(PollTimeout, FarFutureIsCappedAtIntMax) {
  EXPECT_EQ(poll_timeout_ms(kNow + milliseconds(INT_MAX), kNow), INT_MAX);
  EXPECT_EQ(poll_timeout_ms(kNow + milliseconds(int64_t{INT_MAX} + 1), kNow), INT_MAX);
  EXPECT_EQ(poll_timeout_ms(Clock::TimePoint::max(), kNow), INT_MAX);
  // No signed overflow where max() - now does not fit (a negative now).
  EXPECT_EQ(poll_timeout_ms(Clock::TimePoint::max(), Clock::TimePoint::min()), INT_MAX);
}

TEST(PollTimeout, DefaultsToTheSteadyClockNow) {
  // The deadline is read first: in one expression GCC may evaluate the default `now` before it.
  const Clock::TimePoint deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  const int ms = poll_timeout_ms(deadline);
  EXPECT_GT(ms, 0);
  EXPECT_LE(ms, 60'000);
  EXPECT_EQ(poll_timeout_ms(std::chrono::steady_clock::now() - std::chrono::seconds(1)), 0);
}

}  // namespace
}  // namespace collie
