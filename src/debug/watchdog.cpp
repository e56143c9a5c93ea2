#include "debug/watchdog.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "debug/dump_service.h"
#include "debug/flight_recorder.h"

namespace collie {
namespace {

// Every rank dumps (the store's dump_request), and this one before its Work is failed, so a
// caller that exits on the TimeoutError still leaves its evidence.
void default_handler(const Watchdog::Expired& e) {
  DumpService& ds = DumpService::global();
  ds.request_dump(fmt::format("watchdog: {} #{} timed out", op_name(e.op), e.seq),
                  /*all_ranks=*/true, e.message);
  ds.flush(std::chrono::seconds(5));
}

}  // namespace

std::string watchdog_message(const GroupTrace& g, OpType op, uint64_t seq, Millis timeout) {
  const std::string progress =
      is_p2p(op) ? fmt::format("p2p last enqueued #{}, completed #{}", g.last_enqueued_p2p.load(),
                               g.last_completed_p2p.load())
                 : fmt::format("last enqueued #{}, started #{}, completed #{}",
                               g.last_enqueued_collective.load(), g.last_started_collective.load(),
                               g.last_completed_collective.load());
  return fmt::format(
      "[Rank {}] watchdog: {} #{} in group {} '{}' ({}) did not complete within {} ms; group {} "
      "{}. A rank may not have called it or may be stuck: run `collie analyze` on "
      "COLLIE_FR_DUMP_DIR, or rerun with COLLIE_DEBUG=DETAIL",
      g.global_rank, op_name(op), seq, g.pg_id, g.desc, g.backend, timeout.count(), g.pg_id,
      progress);
}

Watchdog::Watchdog(Clock& clock, bool start_thread) : clock_(clock), handler_(default_handler) {
  pending_.reserve(64);
  if (start_thread) {
    thread_.start(
        "collie-watchdog", [this] { loop(); }, set_and_notify(mu_, stop_, cv_));
  }
}

Watchdog::~Watchdog() { thread_.stop(); }

Watchdog& Watchdog::global() {
  static Watchdog w(Clock::system());
  return w;
}

void Watchdog::set_timeout_handler(TimeoutHandler h) {
  std::lock_guard<std::mutex> lk(mu_);
  handler_ = std::move(h);
}

uint64_t Watchdog::watch(std::shared_ptr<GroupTrace> group, OpType op, uint64_t seq, Millis timeout,
                         std::optional<Clock::TimePoint> now) {
  Pending p;
  p.deadline = now.value_or(clock_.now()) + timeout;
  p.group = std::move(group);
  p.op = op;
  p.seq = seq;
  p.timeout = timeout;
  uint64_t token;
  bool wake;
  {
    std::lock_guard<std::mutex> lk(mu_);
    token = p.token = next_token_++;
    // The thread wakes at next_wake_ anyway; a futex wake per op would cost microseconds.
    wake = p.deadline < next_wake_;
    pending_.push_back(std::move(p));
  }
  if (wake) cv_.notify_all();
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

// Event-driven: the thread sleeps until the earliest deadline (idle: until watch() wakes it),
// never on a fixed tick, so a rank that runs ops back to back pays no periodic wakeup. watch()
// wakes it only when the new deadline is earlier than the one it sleeps towards, and an op that
// completes leaves its deadline as a wakeup that finds nothing to do: about one wakeup per op
// timeout, however many ops run.
void Watchdog::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    const auto now = clock_.now();
    auto earliest = Clock::TimePoint::max();
    for (const Pending& p : pending_) earliest = std::min(earliest, p.deadline);
    if (earliest == Clock::TimePoint::max()) {
      next_wake_ = earliest;
      cv_.wait(lk, [&] { return stop_ || !pending_.empty(); });
    } else {
      const auto sleep =
          std::min(clock_.longest_real_wait(),
                   std::max(std::chrono::nanoseconds(0),
                            std::chrono::duration_cast<std::chrono::nanoseconds>(earliest - now)));
      next_wake_ = now + sleep;
      cv_.wait_for(lk, sleep);
    }
    if (stop_) return;
    lk.unlock();
    check_now();
    lk.lock();
  }
}

}  // namespace collie
