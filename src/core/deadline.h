#pragma once
// The one conversion of a deadline into the millisecond timeout poll(2) and epoll_wait(2) take
// (the store client's socket I/O, the store server, the launcher's event loop, DETAIL's
// agreement tree). Pure; thread-safe.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>

#include "core/clock.h"

namespace collie {

// Milliseconds from `now` to `deadline` for poll: 0 once the deadline has passed (poll returns at
// once), rounded up so a poll that times out never returns before the deadline, and at most
// INT_MAX for deadlines too far away to say in an int (time_point::max() included). Never -1
// ("wait forever"): a caller without a deadline passes -1 itself.
inline int poll_timeout_ms(Clock::TimePoint deadline,
                           Clock::TimePoint now = std::chrono::steady_clock::now()) {
  if (deadline <= now) return 0;
  // deadline > now: the difference is in [1, 2^64 - 1] ticks, exact in unsigned arithmetic even
  // where the signed one would overflow (time_point::max() against a negative `now`).
  using Ticks = std::chrono::steady_clock::duration;
  static_assert(Ticks::period::num == 1 && std::chrono::milliseconds::period::den == 1000 &&
                Ticks::period::den % 1000 == 0);
  constexpr uint64_t kTicksPerMs = Ticks::period::den / 1000;
  const uint64_t ticks = static_cast<uint64_t>(deadline.time_since_epoch().count()) -
                         static_cast<uint64_t>(now.time_since_epoch().count());
  const uint64_t ms = ticks / kTicksPerMs + (ticks % kTicksPerMs != 0 ? 1 : 0);
  return static_cast<int>(std::min<uint64_t>(ms, INT_MAX));
}

}  // namespace collie
