#include "perf/step_tracker.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "discovery/end_slurm_step.h"
#include "store/store.h"

namespace collie::perf {

StepTracker::StepTracker(std::shared_ptr<Store> store, int rank, int world_size, Millis timeout,
                         int exit_code, std::function<uint64_t()> last_seq,
                         std::function<void(const std::string&)> on_hang)
    : store_(std::move(store)),
      rank_(rank),
      world_(world_size),
      timeout_(timeout),
      exit_code_(exit_code),
      last_seq_(std::move(last_seq)),
      on_hang_(std::move(on_hang)),
      step_start_(std::chrono::steady_clock::now()),
      watched_label_("rendezvous") {
  thread_.start(
      "collie-steps", [this] { watch(); }, set_and_notify(mu_, stop_, cv_));
  if (store_ && rank_ != 0) {
    try {
      answer_store_ = store_->clone();
    } catch (const std::exception& e) {
      log(LogLevel::Warning,
          "collie perf: no second store connection for the laggard report ({}); on a timeout "
          "rank 0 will report this rank as not answering",
          e.what());
    }
  }
  if (answer_store_) {
    answer_thread_.start(
        "collie-laggard", [this] { answer_report_request(); },
        [this] { answer_store_->interrupt(); });
  }
}

StepTracker::~StepTracker() {
  stopping_.store(true);
  answer_thread_.stop();
  thread_.stop();
}

void StepTracker::enter(const std::string& label) {
  const int64_t idx = ++index_;
  {
    std::lock_guard<std::mutex> lk(mu_);
    step_start_ = std::chrono::steady_clock::now();
    watched_label_ = label;
  }
  // The watchdog sleeps until the old step's deadline unless it must wake for the notice.
  if (notices_long_steps()) cv_.notify_one();
  if (store_) store_->set(fmt::format("perf/step/{}", rank_), fmt::format("{}|{}", idx, label));
}

std::string StepTracker::current() {
  std::lock_guard<std::mutex> lk(mu_);
  return watched_label_;
}

std::string StepTracker::laggards() {
  if (!store_) return "";
  std::vector<std::string> behind;
  try {
    // 1. Ranks that never checked in to this step.
    for (int r = 0; r < world_; ++r) {
      const std::string key = fmt::format("perf/step/{}", r);
      std::string v = store_->check({key}) ? store_->get_string(key) : "0|rendezvous";
      const auto bar = v.find('|');
      if (std::atoll(v.substr(0, bar).c_str()) < index_)
        behind.push_back(fmt::format("rank {} is still in '{}'", r, v.substr(bar + 1)));
    }
    if (!behind.empty()) {
      return fmt::format("{} of {} ranks behind: {}", behind.size(), world_,
                         fmt::join(behind, "; "));
    }
    // 2. Everyone is in this step: compare collective sequence numbers.
    store_->set("perf/report_request", "1");
    const uint64_t mine = last_seq_ ? last_seq_() : 0;
    // One deadline for all answers: the launcher stops the job soon after a rank fails.
    const auto deadline = std::chrono::steady_clock::now() + Millis(1500);
    for (int r = 0; r < world_; ++r) {
      if (r == rank_) continue;
      const std::string key = fmt::format("perf/seq/{}", r);
      try {
        const auto left =
            std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
        if (!store_->check({key})) store_->wait({key}, std::max(left, Millis(1)));
      } catch (const std::exception&) {
        behind.push_back(fmt::format("rank {} did not answer (hung in the backend or dead)", r));
        continue;
      }
      const std::string v = store_->get_string(key);
      const auto bar = v.find('|');
      const uint64_t seq = std::strtoull(v.substr(0, bar).c_str(), nullptr, 10);
      if (seq < mine)
        behind.push_back(fmt::format("rank {} has only issued collective #{} (in '{}')", r, seq,
                                     v.substr(bar + 1)));
    }
    if (behind.empty()) return "";
    return fmt::format("rank {} waits in collective #{}; {}", rank_, mine, fmt::join(behind, "; "));
  } catch (const std::exception& e) {
    return fmt::format("(could not read the other ranks' check-ins: {})", e.what());
  }
}

void StepTracker::report_position() {
  if (!store_ || rank_ == 0) return;
  try {
    store_->set(fmt::format("perf/seq/{}", rank_),
                fmt::format("{}|{}", last_seq_ ? last_seq_() : 0, current()));
  } catch (const std::exception&) {
    // the store is gone (rank 0 exited); nothing left to report to
  }
}

void StepTracker::answer_report_request() {
  // Parked in the store until rank 0 asks; the wait is re-armed hourly only because a store wait
  // needs a deadline. Ends when the answer is given, on destruction (interrupt), or when the
  // store is gone (rank 0 exited: nothing left to answer).
  constexpr Millis kRearm = std::chrono::hours(1);
  while (!stopping_.load()) {
    const auto parked = std::chrono::steady_clock::now();
    try {
      answer_store_->wait({"perf/report_request"}, kRearm);
    } catch (const StoreError&) {
      // Re-arm only after the hourly deadline; the interrupt, or a store error that would
      // come back at once, ends the thread.
      if (std::chrono::steady_clock::now() - parked >= kRearm) continue;
      return;
    } catch (const std::exception&) {
      return;
    }
    try {
      answer_store_->set(fmt::format("perf/seq/{}", rank_),
                         fmt::format("{}|{}", last_seq_ ? last_seq_() : 0, current()));
    } catch (const std::exception&) {
    }
    return;
  }
}

void StepTracker::watch() {
  // Grace beyond -T for the backend's own deadline to fire first and report precisely.
  // Sleeps until the current step's deadline; enter() only ever moves it later, so waking at the
  // old one and sleeping again is all a new step costs (at most one wakeup per timeout).
  const Millis grace = std::max(Millis(2000), timeout_ / 4);
  // Rank 0 says once per step when one runs long, so a stopped rank is not minutes of silence;
  // with a short -T the timeout itself comes soon enough.
  const bool notice = notices_long_steps();
  int64_t noticed = -1;  // the step index last noticed
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    const auto deadline = step_start_ + timeout_ + grace;
    const bool notice_due = notice && noticed != index_.load();
    const auto wake = notice_due ? std::min(deadline, step_start_ + kLongStep) : deadline;
    if (cv_.wait_until(lk, wake, [&] { return stop_; })) return;
    const auto now = std::chrono::steady_clock::now();
    if (notice_due && now >= step_start_ + kLongStep && now < deadline) {
      noticed = index_.load();
      const std::string label = watched_label_;
      lk.unlock();
      std::fprintf(stderr,
                   "collie perf: '%s' has run for %lld s; it fails after %lld s (-T sets that; "
                   "a rank may be stopped or slow)\n",
                   label.c_str(), static_cast<long long>(kLongStep.count() / 1000),
                   static_cast<long long>(timeout_.count() / 1000));
      std::fflush(stderr);
      lk.lock();
      continue;
    }
    if (now < step_start_ + timeout_ + grace) continue;
    lk.unlock();
    const std::string who = laggards();
    const std::string why =
        fmt::format("[Rank {}] step '{}' did not finish within {} ms{}{}", rank_, current(),
                    timeout_.count(), who.empty() ? "" : ": ", who);
    std::fprintf(stderr,
                 "collie perf: timeout: %s; rerun with COLLIE_DEBUG=DETAIL or inspect the ranks "
                 "with `collie analyze`\n",
                 why.c_str());
    std::fflush(stderr);
    if (on_hang_) {
      try {
        on_hang_(why);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "collie perf: saving results before exit failed: %s\n", e.what());
      }
    }
    std::fflush(stdout);
    end_slurm_step_on_failure(Env::process(), exit_code_);
    std::_Exit(exit_code_);
  }
}

}  // namespace collie::perf
