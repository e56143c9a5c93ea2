#include "debug/watchdog.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "debug/dump_service.h"
#include "debug/flight_recorder.h"

namespace collie {
namespace {

constexpr auto kMaxSleep = std::chrono::milliseconds(100);

void default_handler(const Watchdog::Expired& e) {
  DumpService& ds = DumpService::global();
  if (e.group && e.group->store) {
    ds.request_cluster_dump(*e.group->store, fmt::format("watchdog timeout: {}", e.message));
  } else {
    ds.dump_now(fmt::format("watchdog timeout: {}", e.message));
  }
}

}  // namespace

std::string watchdog_message(const GroupTrace& g, OpType op, uint64_t seq, Millis timeout) {
  return fmt::format(
      "[Rank {}] watchdog: {} #{} in group {} '{}' ({}) did not complete within {} ms; group {} "
      "last enqueued #{}, started #{}, completed #{}. A rank may not have called it or may be "
      "stuck: run `collie analyze` on COLLIE_FR_DUMP_DIR, or rerun with COLLIE_DEBUG=DETAIL",
      g.global_rank, op_name(op), seq, g.pg_id, g.desc, g.backend, timeout.count(), g.pg_id,
      g.last_enqueued_collective.load(), g.last_started_collective.load(),
      g.last_completed_collective.load());
}

Watchdog::Watchdog(Clock& clock, bool start_thread) : clock_(clock), handler_(default_handler) {
  pending_.reserve(64);
  if (start_thread) thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Watchdog& Watchdog::global() {
  static Watchdog w(Clock::system());
  return w;
}

void Watchdog::set_timeout_handler(TimeoutHandler h) {
  std::lock_guard<std::mutex> lk(mu_);
  handler_ = std::move(h);
}

uint64_t Watchdog::watch(std::shared_ptr<GroupTrace> group, OpType op, uint64_t seq,
                         Millis timeout) {
  Pending p;
  p.deadline = clock_.now() + timeout;
  p.group = std::move(group);
  p.op = op;
  p.seq = seq;
  p.timeout = timeout;
  bool earliest;
  uint64_t token;
  {
    std::lock_guard<std::mutex> lk(mu_);
    token = p.token = next_token_++;
    earliest = std::all_of(pending_.begin(), pending_.end(),
                           [&](const Pending& q) { return q.deadline > p.deadline; });
    pending_.push_back(std::move(p));
  }
  // The thread sleeps until the earliest deadline; wake it only when that changed.
  if (earliest) cv_.notify_all();
  return token;
}

void Watchdog::attach(uint64_t token, const std::shared_ptr<Work>& work) {
  std::lock_guard<std::mutex> lk(mu_);
  for (Pending& p : pending_) {
    if (p.token == token) {
      p.work = work;
      return;
    }
  }
}

void Watchdog::unwatch(uint64_t token) {
  std::lock_guard<std::mutex> lk(mu_);
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (pending_[i].token == token) {
      pending_[i] = std::move(pending_.back());
      pending_.pop_back();
      return;
    }
  }
}

size_t Watchdog::pending() const {
  std::lock_guard<std::mutex> lk(mu_);
  return pending_.size();
}

int Watchdog::check_now() {
  std::vector<Pending> expired;
  TimeoutHandler handler;
  {
    std::lock_guard<std::mutex> lk(mu_);
    const auto now = clock_.now();
    for (size_t i = 0; i < pending_.size();) {
      if (pending_[i].deadline <= now) {
        expired.push_back(std::move(pending_[i]));
        pending_[i] = std::move(pending_.back());
        pending_.pop_back();
      } else {
        ++i;
      }
    }
    handler = handler_;
  }
  for (const Pending& p : expired) {
    Expired e{p.group, p.op, p.seq, p.timeout,
              p.group ? watchdog_message(*p.group, p.op, p.seq, p.timeout)
                      : fmt::format("watchdog: {} #{} did not complete within {} ms", op_name(p.op),
                                    p.seq, p.timeout.count())};
    log(LogLevel::Error, "{}", e.message);
    if (handler) handler(e);
    if (auto w = p.work.lock()) w->complete(std::make_exception_ptr(TimeoutError(e.message)));
  }
  return static_cast<int>(expired.size());
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    auto sleep = std::chrono::duration_cast<std::chrono::nanoseconds>(kMaxSleep);
    const auto now = clock_.now();
    for (const Pending& p : pending_) {
      sleep = std::min(
          sleep, std::max(std::chrono::nanoseconds(0),
                          std::chrono::duration_cast<std::chrono::nanoseconds>(p.deadline - now)));
    }
    cv_.wait_for(lk, sleep);
    if (stop_) return;
    lk.unlock();
    check_now();
    lk.lock();
  }
}

}  // namespace collie
