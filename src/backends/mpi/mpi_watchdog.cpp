#include "backends/mpi/mpi_watchdog.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "core/clock.h"

namespace collie {
namespace {

// The system clock: CLOCK_MONOTONIC, from the time-stamp counter where it can (~10 ns, once per
// blocking op).
int64_t now_ns() { return Clock::system().mono_ns(); }

}  // namespace

MpiWatchdog::MpiWatchdog(OnExpire on_expire) : on_expire_(std::move(on_expire)) {
  thread_.start(
      "collie-mpi-wdog", [this] { loop(); }, set_and_notify(mu_, stop_, cv_));
}

MpiWatchdog::~MpiWatchdog() { thread_.stop(); }

void MpiWatchdog::arm(OpType op, uint64_t seq, Millis timeout) {
  op_.store(static_cast<uint8_t>(op), std::memory_order_relaxed);
  seq_.store(seq, std::memory_order_relaxed);
  timeout_ms_.store(timeout.count(), std::memory_order_relaxed);
  const int64_t timeout_ns = std::chrono::nanoseconds(timeout).count();
  deadline_ns_.store(now_ns() + timeout_ns, std::memory_order_release);
  if (timeout_ns < shortest_timeout_ns_.load(std::memory_order_relaxed)) {
    // A shorter timeout than the thread sleeps by when idle (the group's first op, or an op
    // given its own): wake it to sleep by this one. Rare: not on an op's usual path.
    std::lock_guard<std::mutex> lk(mu_);
    shortest_timeout_ns_.store(timeout_ns, std::memory_order_relaxed);
    cv_.notify_all();
  }
}

void MpiWatchdog::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    const int64_t d = deadline_ns_.load(std::memory_order_acquire);
    const int64_t now = now_ns();
    if (d != 0 && now > d) {
      on_expire_(static_cast<OpType>(op_.load(std::memory_order_relaxed)),
                 seq_.load(std::memory_order_relaxed),
                 Millis(timeout_ms_.load(std::memory_order_relaxed)));
      return;
    }
    // An op armed from now on has a deadline at least the shortest timeout away (a shorter one
    // wakes the thread), so sleep that long, or to the armed op's deadline when that is sooner.
    const int64_t shortest = shortest_timeout_ns_.load(std::memory_order_relaxed);
    if (d == 0 && shortest == std::numeric_limits<int64_t>::max()) {
      cv_.wait(lk);  // nothing armed yet
      continue;
    }
    const int64_t wake = d != 0 ? std::min(d + 1, now + shortest) : now + shortest;
    cv_.wait_for(lk, std::chrono::nanoseconds(std::max<int64_t>(wake - now, 1'000'000)));
  }
}

}  // namespace collie
