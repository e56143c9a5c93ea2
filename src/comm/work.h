#pragma once
// Work: the handle of one submitted operation.
//
// A backend creates one Work per op and calls complete() exactly once (success or error); the
// first completion wins, so a watchdog may also fail a Work whose backend is stuck.
// Works that advance only when polled (MPI requests, CUDA events) override progress().
// Thread safety: all public methods may be called from any thread.
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "comm/op.h"
#include "core/export.h"

namespace collie {

class COLLIE_API Work {
 public:
  Work(OpType op, uint64_t seq, Millis timeout);
  virtual ~Work() = default;
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;

  // Non-blocking; may call progress() once.
  bool is_completed();
  bool is_success();
  // Blocks until the op completes or `timeout` passes (kUseGroupTimeout = the op's own
  // timeout). Rethrows the op's error; throws TimeoutError naming op, seq and rank if late. A
  // polled op (needs_polling) is polled once more after `timeout` has passed, so that its own
  // deadline handling in progress() decides (and its error is the one thrown).
  void wait(Millis timeout = kUseGroupTimeout);
  // The op's error once completed with one, else nullptr.
  std::exception_ptr exception();

  // Marks the op done. Returns false when it was already completed (the call is then a no-op).
  bool complete(std::exception_ptr error = nullptr);
  // Runs cb once when the op completes: immediately (on this thread) if it already has,
  // otherwise on the completing thread. REQUIRES: cb does not block.
  void on_complete(std::function<void(Work&)> cb);
  // The same without allocating (an op's always-on bookkeeping): fn(work, ctx) runs once when
  // the op completes, immediately if it already has; `owner` is held until then (or until the
  // Work is destroyed uncompleted) and keeps what ctx points into alive. The first hook of a
  // Work is kept inline; a second one becomes an on_complete callback (which allocates). fn
  // must not block. REQUIRES: no other thread calls set_completion_hook on this Work at the
  // same time (the submitting thread sets it; completion may run concurrently).
  using CompletionFn = void (*)(Work&, void* ctx);
  void set_completion_hook(CompletionFn fn, void* ctx, std::shared_ptr<void> owner);

  OpType op() const { return op_; }
  uint64_t seq() const { return seq_; }
  Millis timeout() const { return timeout_; }
  // Label used in error messages, e.g. "[Rank 2] all_reduce #57"; set by the group.
  void set_context(int rank) { rank_ = rank; }

 protected:
  // Override to advance polled operations; call complete() from here when done.
  virtual void progress() {}
  // True when wait() must poll progress() instead of sleeping until complete().
  virtual bool needs_polling() const { return false; }

 private:
  const OpType op_;
  const uint64_t seq_;
  const Millis timeout_;
  int rank_ = -1;
  // The op's state in one word, so that completing an op, waiting for a completed one and
  // setting its hook each take at most one locked instruction and no lock: kDone once
  // completed; kClaimed while a failing completion writes error_ (a concurrent completion then
  // loses); kHook once hook_* are set; kWaiters once a wait() may sleep on this word (a futex:
  // the completer that sees it wakes the sleepers); kCallbacks once callbacks_ may be
  // non-empty (the completer then locks mu_).
  static constexpr uint32_t kDone = 1, kClaimed = 2, kHook = 4, kWaiters = 8, kCallbacks = 16;
  std::atomic<uint32_t> state_{0};
  void run_completion(uint32_t prev);  // the completion's side effects; prev: state_ before kDone
  // Runs the hook once and lets its owner go: by the completer that saw kHook, or by
  // set_completion_hook when the op completed before kHook was set (each field was written
  // before kHook and is touched by no one else after).
  void run_hook();
  std::mutex mu_;  // guards callbacks_
  // Written before kDone is set (by the thread holding kClaimed) and never after; read without
  // a lock once kDone is seen.
  std::exception_ptr error_;
  std::vector<std::function<void(Work&)>> callbacks_;
  // Written by set_completion_hook before it sets kHook; taken by the completer that sees kHook.
  CompletionFn hook_fn_ = nullptr;
  void* hook_ctx_ = nullptr;
  std::shared_ptr<void> hook_owner_;
};

}  // namespace collie
