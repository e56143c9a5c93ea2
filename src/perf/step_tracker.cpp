#include "perf/step_tracker.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "store/store.h"

namespace collie::perf {

StepTracker::StepTracker(std::shared_ptr<Store> store, int rank, int world_size, Millis timeout,
                         int exit_code)
    : store_(std::move(store)),
      rank_(rank),
      world_(world_size),
      timeout_(timeout),
      exit_code_(exit_code),
      step_start_(std::chrono::steady_clock::now()),
      watched_label_("rendezvous") {
  thread_ = std::thread([this] { watch(); });
}

StepTracker::~StepTracker() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void StepTracker::enter(const std::string& label) {
  const int64_t idx = ++index_;
  {
    std::lock_guard<std::mutex> lk(mu_);
    step_start_ = std::chrono::steady_clock::now();
    watched_label_ = label;
  }
  if (store_) store_->set(fmt::format("perf/step/{}", rank_), fmt::format("{}|{}", idx, label));
}

std::string StepTracker::current() {
  std::lock_guard<std::mutex> lk(mu_);
  return watched_label_;
}

std::string StepTracker::laggards() {
  if (!store_) return "";
  const std::string label = current();
  std::vector<int> behind;
  std::string detail;
  try {
    for (int r = 0; r < world_; ++r) {
      const std::string key = fmt::format("perf/step/{}", r);
      std::string v = store_->check({key}) ? store_->get_string(key) : "0|rendezvous";
      const auto bar = v.find('|');
      const int64_t idx = std::atoll(v.substr(0, bar).c_str());
      if (idx < index_) {
        behind.push_back(r);
        detail += fmt::format("{}rank {} is still in '{}'", detail.empty() ? "" : "; ", r,
                              v.substr(bar + 1));
      }
    }
  } catch (const std::exception& e) {
    return fmt::format("(could not read the other ranks' check-ins: {})", e.what());
  }
  if (behind.empty()) return "";
  return fmt::format("{} of {} ranks had not reached '{}': {}", behind.size(), world_, label,
                     detail);
}

void StepTracker::watch() {
  // Grace beyond -T for the backend's own deadline to fire first and report precisely.
  const Millis grace = std::max(Millis(2000), timeout_ / 4);
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    const auto deadline = step_start_ + timeout_ + grace;
    if (cv_.wait_until(lk, deadline, [&] { return stop_; })) return;
    if (std::chrono::steady_clock::now() < step_start_ + timeout_ + grace) continue;
    const std::string label = watched_label_;
    lk.unlock();
    const std::string who = laggards();
    std::fprintf(stderr,
                 "collie perf: timeout: [Rank %d] step '%s' did not finish within %lld ms%s%s; "
                 "rerun with COLLIE_DEBUG=DETAIL or inspect the ranks with `collie analyze`\n",
                 rank_, label.c_str(), static_cast<long long>(timeout_.count()),
                 who.empty() ? "" : ": ", who.c_str());
    std::fflush(stderr);
    std::fflush(stdout);
    std::_Exit(exit_code_);
  }
}

}  // namespace collie::perf
