#pragma once
// Watchdog: one thread that gives every in-flight op a deadline (its OpCall timeout). When a
// deadline passes it logs the op, its seq and the group's last enqueued/started/completed seq,
// runs the timeout handler (by default: dump the flight recorder and ask every rank to dump),
// and fails the op's Work with TimeoutError so the caller's wait() raises instead of hanging.
// An op that blocks inside the backend's run() (Gloo without async_op) has no Work yet: the
// watchdog still logs and dumps at the deadline, and the backend's own timeout ends the call.
//
// Time comes from a Clock, so tests drive it with FakeClock and check_now().
// Ownership: global() lives for the process. watch() keeps a weak reference to the Work.
// Thread safety: all methods may be called from any thread. watch/attach/unwatch (an op's path)
// take no lock shared with other threads and neither allocate nor make a system call: an op
// claims one of kSlots fixed slots by compare-and-swap and publishes its deadline there; only
// when more than kSlots ops are in flight does the rest go to a vector under the watchdog's
// mutex. watch() wakes the thread (mutex + futex) only when its deadline is earlier than the one
// the thread sleeps towards, which the thread then keeps even when that op has ended (so ops that
// end before the thread runs do not wake it one by one). The timeout handler runs on the watchdog
// thread without the lock.
#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "comm/work.h"
#include "core/clock.h"
#include "core/worker_thread.h"

namespace collie {

struct GroupTrace;

class Watchdog {
 public:
  struct Expired {
    std::shared_ptr<GroupTrace> group;
    OpType op = OpType::Barrier;
    uint64_t seq = 0;
    Millis timeout{0};
    std::string message;  // the TimeoutError text
  };
  using TimeoutHandler = std::function<void(const Expired&)>;

  // start_thread = false: nothing runs until check_now() (unit tests).
  explicit Watchdog(Clock& clock, bool start_thread = true);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  static Watchdog& global();

  // Replaces the default handler (which dumps the flight recorder); runs on the watchdog thread.
  void set_timeout_handler(TimeoutHandler h);

  // Starts watching an op; returns a token for attach/unwatch. The deadline is now + timeout,
  // `now` being the caller's reading of clock() when given (one clock read per op, not two).
  uint64_t watch(const std::shared_ptr<GroupTrace>& group, OpType op, uint64_t seq, Millis timeout,
                 std::optional<Clock::TimePoint> now = std::nullopt);
  Clock& clock() const { return clock_; }
  // Gives the watchdog the op's Work once the backend returned it.
  void attach(uint64_t token, const std::shared_ptr<Work>& work);
  void unwatch(uint64_t token);
  size_t pending() const;

  // Handles every op whose deadline has passed; returns how many expired.
  int check_now();

 private:
  struct Pending {
    uint64_t token = 0;
    Clock::TimePoint deadline;
    std::shared_ptr<GroupTrace> group;
    std::weak_ptr<Work> work;
    OpType op = OpType::Barrier;
    uint64_t seq = 0;
    Millis timeout{0};
  };
  static constexpr int kSlots = 256;
  // A slot's token: 0 free, kBusy while one thread rewrites it, else (generation << 8) | index.
  static constexpr uint64_t kBusy = ~uint64_t{0};
  static constexpr uint64_t kOverflowBit = uint64_t{1} << 63;  // tokens of pending_
  struct alignas(64) Slot {
    std::atomic<uint64_t> token{0};
    std::atomic<int64_t> deadline_ns{0};  // read by the thread before it owns the slot
    uint64_t generation = 0;              // the rest: only by the thread that set kBusy
    Pending p;                            // p.group stays between ops (no refcount per op)
  };
  void loop();
  void wake_if_earlier(Clock::TimePoint deadline);
  // Makes d the wake time unless another thread made it earlier still, and wakes the thread.
  // REQUIRES: d < w, the wake time the caller read. Out of line: the path of an op that wakes
  // nothing stays short.
  [[gnu::noinline]] void lower_wake_time(int64_t d, int64_t w);
  // The token of slot s once no thread is rewriting it.
  static uint64_t settled_token(const Slot& s);
  Clock::TimePoint earliest_deadline() const;  // REQUIRES: mu_ held
  Clock& clock_;
  std::array<Slot, kSlots> slots_;
  mutable std::mutex mu_;  // pending_, handler_, the thread's sleep; not on an op's fast path
  std::condition_variable cv_;
  std::vector<Pending> pending_;  // ops beyond the slots
  uint64_t next_token_ = 1;
  // When the thread will next look (steady ns); watch() wakes it for an earlier deadline.
  std::atomic<int64_t> next_wake_ns_;
  bool kicked_ = false;
  bool stop_ = false;
  TimeoutHandler handler_;
  WorkerThread thread_;
};

// The watchdog's deadline is the op's timeout plus this grace, so a backend that enforces the
// timeout itself reports first (its message names the peer); the watchdog is the safety net.
inline Millis watchdog_grace(Millis op_timeout) {
  return std::clamp(op_timeout / 4, Millis(50), Millis(2000));
}

// "[Rank 2] watchdog: all_reduce #57 in group 0 'default_pg' (gloo) did not complete within
// 2000 ms; group 0 last enqueued #57, started #57, completed #56. ..."
std::string watchdog_message(const GroupTrace& g, OpType op, uint64_t seq, Millis timeout);

}  // namespace collie
