#include "core/clock.h"

#include <thread>

#include "core/tsc_clock.h"

namespace collie {
namespace {

class SystemClock : public Clock {
 public:
  // steady_clock's time (CLOCK_MONOTONIC), read from the time-stamp counter where it can be.
  TimePoint now() const override {
    if (tsc_ != nullptr) return TimePoint(std::chrono::nanoseconds(tsc_->now_ns()));
    return std::chrono::steady_clock::now();
  }
  void sleep_for(std::chrono::nanoseconds d) override { std::this_thread::sleep_for(d); }

 private:
  TscClock* const tsc_ = TscClock::get();
};

}  // namespace

int64_t Clock::wall_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Clock& Clock::system() {
  static SystemClock clock;
  return clock;
}

void FakeClock::sleep_for(std::chrono::nanoseconds d) {
  const int64_t until = ns_.load() + d.count();
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [&] { return ns_.load() >= until; });
}

void FakeClock::advance(std::chrono::nanoseconds d) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    ns_ += d.count();
  }
  cv_.notify_all();
}

}  // namespace collie
