#include "backends/mpi/mpi_watchdog.h"

#include <chrono>

#include "core/clock.h"

namespace collie {
namespace {

// The system clock: CLOCK_MONOTONIC, from the time-stamp counter where it can (~10 ns, once per
// blocking op).
int64_t now_ns() { return Clock::system().mono_ns(); }

// How late past its deadline an op may be reported; the watchdog sleeps this long between checks.
constexpr auto kCheckPeriod = std::chrono::milliseconds(50);

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
  deadline_ns_.store(now_ns() + std::chrono::nanoseconds(timeout).count(),
                     std::memory_order_release);
}

void MpiWatchdog::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    cv_.wait_for(lk, kCheckPeriod);
    const int64_t d = deadline_ns_.load(std::memory_order_acquire);
    if (d != 0 && now_ns() > d) {
      on_expire_(static_cast<OpType>(op_.load(std::memory_order_relaxed)),
                 seq_.load(std::memory_order_relaxed),
                 Millis(timeout_ms_.load(std::memory_order_relaxed)));
      return;
    }
  }
}

}  // namespace collie
