#pragma once
// Store-based check-ins so an expired -T names the ranks that had not finished which step.
//
// Every rank calls enter() at each step boundary (a few per size, never per collective); that
// writes "perf/step/<rank>" = "<index>|<label>" to the group's store. A watchdog thread ends the
// process (exit code given at construction) when one step outlives timeout + grace, after printing
// the laggard report, so a backend that ignores its deadline still cannot hang the run.
// On a timeout, rank 0 sets "perf/report_request"; every other rank has a thread parked in a
// store wait for that key (on a store client of its own, so it holds up nobody) that answers with
// its last collective sequence number at once, so rank 0 can name the ranks that are behind even
// when all of them are inside the same step. Neither thread wakes on a timer: the watchdog sleeps
// until the current step's deadline, the answering thread until the key appears (or destruction
// interrupts its wait). On rank 0, with a timeout of 30 s or more, the watchdog also wakes once
// a step has run kLongStep and says so on stderr (once per step), so a stopped rank under the
// default 5-minute timeout is not minutes of silence.
// Thread safety: enter() from the driver thread only; laggards() from any thread.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/timeout.h"
#include "core/worker_thread.h"

namespace collie {
class Store;
}

namespace collie::perf {

class StepTracker {
 public:
  static constexpr Millis kLongStep{10'000};
  // `store` may be null (no check-ins, only the watchdog). REQUIRES: timeout > 0.
  // `last_seq` returns this rank's last submitted collective sequence number (thread-safe).
  // `on_hang` (may be empty) runs on the watchdog thread before the process ends.
  StepTracker(std::shared_ptr<Store> store, int rank, int world_size, Millis timeout, int exit_code,
              std::function<uint64_t()> last_seq,
              std::function<void(const std::string&)> on_hang = {});
  ~StepTracker();
  StepTracker(const StepTracker&) = delete;
  StepTracker& operator=(const StepTracker&) = delete;

  void enter(const std::string& label);
  std::string current();
  // Names the ranks behind this one: by step check-in, else by collective sequence number
  // ("rank 1 is at collective #4 in '<step>' while rank 0 waits in #5"). Empty when it cannot
  // tell. Asks the other ranks for their sequence numbers (waits at most ~1.5 s in all).
  std::string laggards();
  // A non-zero rank whose step failed publishes its position before it exits, so that rank 0's
  // laggards() tells it (still present, at the same collective) from a frozen or dead rank.
  // Never throws. Thread-safe.
  void report_position();

 private:
  void watch();
  bool notices_long_steps() const { return rank_ == 0 && timeout_ >= 3 * kLongStep; }
  void answer_report_request();  // the answering thread's body (ranks other than 0)
  std::shared_ptr<Store> store_;
  std::shared_ptr<Store> answer_store_;  // the answering thread's own client (a clone)
  const int rank_, world_;
  const Millis timeout_;
  const int exit_code_;
  std::function<uint64_t()> last_seq_;
  std::function<void(const std::string&)> on_hang_;
  std::atomic<int64_t> index_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::chrono::steady_clock::time_point step_start_;
  std::string watched_label_;
  bool stop_ = false;
  std::atomic<bool> stopping_{false};  // tells the answering thread its wait was interrupted
  WorkerThread thread_;
  WorkerThread answer_thread_;
};

}  // namespace collie::perf
