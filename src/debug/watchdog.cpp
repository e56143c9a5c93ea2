#include "debug/watchdog.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

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

namespace {
int64_t ns_of(Clock::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
Clock::TimePoint time_of(int64_t ns) { return Clock::TimePoint(std::chrono::nanoseconds(ns)); }
// Where this thread last found a free slot: an op thread reuses the same slot op after op.
thread_local unsigned t_slot_hint = 0;
template <typename V>
auto find_token(V& v, uint64_t token) {
  return std::find_if(v.begin(), v.end(), [&](const auto& p) { return p.token == token; });
}
}  // namespace

// Without a thread nothing is woken (next_wake_ns_ = the earliest time: no deadline is earlier).
Watchdog::Watchdog(Clock& clock, bool start_thread)
    : clock_(clock),
      next_wake_ns_(start_thread ? std::numeric_limits<int64_t>::max()
                                 : std::numeric_limits<int64_t>::min()),
      handler_(default_handler) {
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

uint64_t Watchdog::watch(const std::shared_ptr<GroupTrace>& group, OpType op, uint64_t seq,
                         Millis timeout, std::optional<Clock::TimePoint> now) {
  // Not now.value_or(clock_.now()): that reads the clock even when the caller gave its reading.
  const Clock::TimePoint deadline = (now ? *now : clock_.now()) + timeout;
  for (unsigned k = 0; k < kSlots; ++k) {
    const unsigned i = (t_slot_hint + k) % kSlots;
    Slot& s = slots_[i];
    uint64_t free = 0;
    if (s.token.load(std::memory_order_relaxed) != 0 ||
        !s.token.compare_exchange_strong(free, kBusy, std::memory_order_acquire,
                                         std::memory_order_relaxed))
      continue;
    t_slot_hint = i;
    if (s.p.group != group) s.p.group = group;
    s.p.op = op;
    s.p.seq = seq;
    s.p.timeout = timeout;
    s.p.deadline = deadline;
    s.deadline_ns.store(ns_of(deadline), std::memory_order_relaxed);
    const uint64_t token = (++s.generation << 8) | i;
    s.p.token = token;
    // The claim above (a seq_cst read-modify-write) orders this op against the thread's look
    // at the slots: a look that read the slot free came before the claim, so the wake time the
    // thread published before that look is what wake_if_earlier reads below; a later look
    // waits here for the token (settled_token). So publishing the token needs only release.
    s.token.store(token, std::memory_order_release);
    wake_if_earlier(deadline);
    return token;
  }
  Pending p;  // more than kSlots ops in flight: the locked list
  p.deadline = deadline;
  p.group = group;
  p.op = op;
  p.seq = seq;
  p.timeout = timeout;
  uint64_t token;
  {
    std::lock_guard<std::mutex> lk(mu_);
    token = p.token = kOverflowBit | next_token_++;
    pending_.push_back(std::move(p));
  }
  wake_if_earlier(deadline);
  return token;
}

void Watchdog::wake_if_earlier(Clock::TimePoint deadline) {
  // The thread wakes at next_wake_ns_ anyway; a futex wake per op would cost microseconds. An
  // earlier deadline becomes the wake time before the thread is woken, and the thread keeps it
  // even when this op has ended before it looks (loop()), so the ops after it, whose deadlines
  // are later, do not wake it again.
  const int64_t d = ns_of(deadline);
  const int64_t w = next_wake_ns_.load(std::memory_order_seq_cst);
  if (d < w) [[unlikely]]
    lower_wake_time(d, w);
}

void Watchdog::lower_wake_time(int64_t d, int64_t w) {
  while (!next_wake_ns_.compare_exchange_weak(w, d, std::memory_order_seq_cst,
                                              std::memory_order_seq_cst)) {
    if (d >= w) return;  // another watch() lowered it further (and woke the thread)
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    kicked_ = true;
  }
  cv_.notify_all();
}

void Watchdog::attach(uint64_t token, const std::shared_ptr<Work>& work) {
  if (token == 0) return;  // never a token watch() gave
  if (token & kOverflowBit) {
    std::lock_guard<std::mutex> lk(mu_);
    if (auto it = find_token(pending_, token); it != pending_.end()) it->work = work;
    return;
  }
  Slot& s = slots_[token & 0xff];
  uint64_t mine = token;
  // Fails when the op already expired (the watchdog took it), as a late attach did before.
  if (!s.token.compare_exchange_strong(mine, kBusy, std::memory_order_acquire,
                                       std::memory_order_relaxed))
    return;
  s.p.work = work;
  s.token.store(token, std::memory_order_release);
}

void Watchdog::unwatch(uint64_t token) {
  if (token == 0) return;  // never a token watch() gave
  if (token & kOverflowBit) {
    std::lock_guard<std::mutex> lk(mu_);
    if (auto it = find_token(pending_, token); it != pending_.end()) {
      *it = std::move(pending_.back());
      pending_.pop_back();
    }
    return;
  }
  Slot& s = slots_[token & 0xff];
  uint64_t mine = token;
  if (!s.token.compare_exchange_strong(mine, kBusy, std::memory_order_acquire,
                                       std::memory_order_relaxed))
    return;
  s.p.work.reset();
  s.token.store(0, std::memory_order_release);
}

uint64_t Watchdog::settled_token(const Slot& s) {
  uint64_t t = s.token.load(std::memory_order_seq_cst);
  while (t == kBusy) {  // held for a few stores; yield in case its thread was preempted
    std::this_thread::yield();
    t = s.token.load(std::memory_order_seq_cst);
  }
  return t;
}

size_t Watchdog::pending() const {
  size_t n = 0;
  for (const Slot& s : slots_) n += settled_token(s) != 0;
  std::lock_guard<std::mutex> lk(mu_);
  return n + pending_.size();
}

Clock::TimePoint Watchdog::earliest_deadline() const {
  auto earliest = Clock::TimePoint::max();
  for (const Slot& s : slots_) {
    if (settled_token(s) != 0)
      earliest = std::min(earliest, time_of(s.deadline_ns.load(std::memory_order_relaxed)));
  }
  for (const Pending& p : pending_) earliest = std::min(earliest, p.deadline);
  return earliest;
}

int Watchdog::check_now() {
  std::vector<Pending> expired;
  const auto now = clock_.now();  // no lock held: a slow clock never stalls an op
  for (Slot& s : slots_) {
    const uint64_t t = settled_token(s);
    if (t == 0 || time_of(s.deadline_ns.load(std::memory_order_relaxed)) > now) continue;
    uint64_t mine = t;
    if (!s.token.compare_exchange_strong(mine, kBusy, std::memory_order_acquire,
                                         std::memory_order_relaxed))
      continue;  // unwatched (or reused) meanwhile
    expired.push_back(s.p);
    s.p.work.reset();
    s.token.store(0, std::memory_order_release);
  }
  TimeoutHandler handler;
  {
    std::lock_guard<std::mutex> lk(mu_);
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
    kicked_ = false;
    // A wake time still ahead stays, though its op may have ended (a wakeup that finds nothing,
    // about once per op timeout); one that has come is dropped. Without this, a thread woken for
    // an op that ended before it looked slept with no wake time, and the next op woke it again:
    // a futex wake and a context switch per op wherever ops end before this thread runs.
    const int64_t kept = next_wake_ns_.load(std::memory_order_seq_cst);
    auto earliest = kept > ns_of(clock_.now()) ? time_of(kept) : Clock::TimePoint::max();
    // Publish the wake time, then look at the slots again (watch() claims its slot, then reads
    // the wake time): an op watched meanwhile is either seen here or wakes the thread.
    earliest = std::min(earliest, earliest_deadline());
    next_wake_ns_.store(ns_of(earliest), std::memory_order_seq_cst);
    earliest = std::min(earliest, earliest_deadline());
    next_wake_ns_.store(ns_of(earliest), std::memory_order_seq_cst);
    const auto woken = [&] { return stop_ || kicked_; };
    if (earliest == Clock::TimePoint::max()) {
      cv_.wait(lk, woken);
    } else {
      const auto now = clock_.now();
      const auto sleep =
          std::min(clock_.longest_real_wait(),
                   std::max(std::chrono::nanoseconds(0),
                            std::chrono::duration_cast<std::chrono::nanoseconds>(earliest - now)));
      cv_.wait_for(lk, sleep, woken);
    }
    if (stop_) return;
    lk.unlock();
    check_now();
    lk.lock();
  }
}

}  // namespace collie
