#pragma once
// Time seam (LevelDB's Env idea): code that waits or measures deadlines takes a Clock so tests
// can drive it with FakeClock instead of sleeping. SystemClock (steady_clock's time, read from
// the time-stamp counter where core/tsc_clock.h can) is thread-safe;
// FakeClock is thread-safe (atomic time, sleepers wake when advance() passes their deadline).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace collie {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  virtual void sleep_for(std::chrono::nanoseconds d) = 0;
  // Nanoseconds since the Unix epoch (wall clock), for timestamps in records and dumps.
  virtual int64_t wall_ns() const;
  // now() in nanoseconds: monotonic, for timestamps whose differences must stay true when the
  // wall clock steps (the flight recorder records these and converts them when it dumps).
  int64_t mono_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(now().time_since_epoch()).count();
  }
  // How long a thread waiting on a condition variable for a deadline on this clock may sleep in
  // real time before it must read now() again. The system clock: no limit (sleep until the
  // deadline). FakeClock: time jumps without notice, so a few milliseconds.
  virtual std::chrono::nanoseconds longest_real_wait() const {
    return std::chrono::nanoseconds::max();
  }
  static Clock& system();
};

class FakeClock : public Clock {
 public:
  TimePoint now() const override { return TimePoint(std::chrono::nanoseconds(ns_.load())); }
  int64_t wall_ns() const override { return ns_.load(); }
  std::chrono::nanoseconds longest_real_wait() const override {
    return std::chrono::milliseconds(5);
  }
  // Blocks until another thread advances time past now + d.
  void sleep_for(std::chrono::nanoseconds d) override;
  void advance(std::chrono::nanoseconds d);

 private:
  std::atomic<int64_t> ns_{1'000'000'000};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace collie
