#pragma once
// Store-based check-ins so an expired -T names the ranks that had not finished which step.
//
// Every rank calls enter() at each step boundary (a few per size, never per collective); that
// writes "perf/step/<rank>" = "<index>|<label>" to the group's store. A watchdog thread ends the
// process (exit code given at construction) when one step outlives timeout + grace, after printing
// the laggard report, so a backend that ignores its deadline still cannot hang the run.
// Thread safety: enter() from the driver thread only; laggards() from any thread.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/timeout.h"

namespace collie {
class Store;
}

namespace collie::perf {

class StepTracker {
 public:
  // `store` may be null (no check-ins, only the watchdog). REQUIRES: timeout > 0.
  StepTracker(std::shared_ptr<Store> store, int rank, int world_size, Millis timeout,
              int exit_code);
  ~StepTracker();
  StepTracker(const StepTracker&) = delete;
  StepTracker& operator=(const StepTracker&) = delete;

  void enter(const std::string& label);
  std::string current();
  // "ranks 2, 3 had not finished '<label>' (rank 2 last checked in at '...')"; empty when every
  // rank reached the current step or the store cannot tell.
  std::string laggards();

 private:
  void watch();
  std::shared_ptr<Store> store_;
  const int rank_, world_;
  const Millis timeout_;
  const int exit_code_;
  std::atomic<int64_t> index_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::chrono::steady_clock::time_point step_start_;
  std::string watched_label_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace collie::perf
