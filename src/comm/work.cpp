#include "comm/work.h"

#include <fmt/format.h>

#include <chrono>

#include "core/error.h"
#include "core/futex.h"

namespace collie {

Work::Work(OpType op, uint64_t seq, Millis timeout) : op_(op), seq_(seq), timeout_(timeout) {}

bool Work::is_completed() {
  if (state_.load(std::memory_order_acquire) & kDone) return true;
  progress();
  return (state_.load(std::memory_order_acquire) & kDone) != 0;
}

bool Work::is_success() { return is_completed() && error_ == nullptr; }

std::exception_ptr Work::exception() {
  // error_ is set before kDone and never changes after.
  return (state_.load(std::memory_order_acquire) & kDone) ? error_ : nullptr;
}

void Work::wait(Millis timeout) {
  uint32_t s = state_.load(std::memory_order_acquire);
  // A completed Work (every inline op) takes no lock and reads no clock.
  if (!(s & kDone)) {
    const Millis limit = timeout == kUseGroupTimeout ? timeout_ : timeout;
    // A completer that sets kDone after this sees kWaiters and wakes the word's sleepers; one
    // that set it before left kDone in s. A sleep on a word that changed meanwhile returns at
    // once, so no wake-up is lost.
    s = state_.fetch_or(kWaiters, std::memory_order_acq_rel) | kWaiters;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    const bool polled = needs_polling();
    while (!(s & kDone)) {
      const auto now = std::chrono::steady_clock::now();
      const bool past = now >= deadline;
      if (polled) {
        // A polled op acts on its own deadline inside progress() (NCCL aborts its communicator
        // there), a deadline set when the op was issued, so no later than this one: it is
        // polled once more after this deadline has passed before the wait gives up on it.
        progress();
        s = state_.load(std::memory_order_acquire);
        if ((s & kDone) || past) break;
        futex_wait(state_, s, std::chrono::microseconds(50));
      } else {
        if (past) break;
        futex_wait(state_, s, deadline - now);
      }
      s = state_.load(std::memory_order_acquire);
    }
    if (!(s & kDone)) {
      throw TimeoutError(fmt::format(
          "[Rank {}] {} #{} did not complete within {} ms; some rank may not have called it "
          "(set COLLIE_DEBUG=DETAIL to check, or run `collie analyze` on the flight-recorder "
          "dumps)",
          rank_, op_name(op_), seq_, limit.count()));
    }
  }
  if (error_) std::rethrow_exception(error_);
}

bool Work::complete(std::exception_ptr error) {
  uint32_t s = state_.load(std::memory_order_relaxed);
  if (error == nullptr) {
    // A success writes nothing but the state: one compare-and-swap.
    do {
      if (s & (kDone | kClaimed)) return false;
    } while (!state_.compare_exchange_weak(s, s | kDone, std::memory_order_acq_rel,
                                           std::memory_order_relaxed));
  } else {
    do {
      if (s & (kDone | kClaimed)) return false;
    } while (!state_.compare_exchange_weak(s, s | kClaimed, std::memory_order_acquire,
                                           std::memory_order_relaxed));
    error_ = std::move(error);
    s = state_.fetch_or(kDone, std::memory_order_acq_rel);
  }
  run_completion(s);
  return true;
}

void Work::run_completion(uint32_t prev) {
  if (prev & kWaiters) futex_wake_all(state_);
  if (prev & kCallbacks) {
    std::vector<std::function<void(Work&)>> cbs;
    {
      std::lock_guard<std::mutex> lk(mu_);
      cbs.swap(callbacks_);
    }
    for (auto& cb : cbs) cb(*this);
  }
  if (prev & kHook) run_hook();
}

void Work::run_hook() {
  const CompletionFn fn = hook_fn_;
  const std::shared_ptr<void> owner = std::move(hook_owner_);  // held until fn returns
  hook_fn_ = nullptr;
  fn(*this, hook_ctx_);
}

void Work::set_completion_hook(CompletionFn fn, void* ctx, std::shared_ptr<void> owner) {
  const uint32_t s = state_.load(std::memory_order_acquire);
  if (s & kDone) {
    fn(*this, ctx);
    return;
  }
  if (s & kHook) {  // a second hook: an ordinary callback (this one allocates)
    on_complete([fn, ctx, owner = std::move(owner)](Work& w) { fn(w, ctx); });
    return;
  }
  hook_fn_ = fn;
  hook_ctx_ = ctx;
  hook_owner_ = std::move(owner);
  // Completed in between, without seeing the hook: it runs here.
  if (state_.fetch_or(kHook, std::memory_order_acq_rel) & kDone) run_hook();
}

void Work::on_complete(std::function<void(Work&)> cb) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!(state_.load(std::memory_order_acquire) & kDone)) {
      callbacks_.push_back(std::move(cb));
      if (!(state_.fetch_or(kCallbacks, std::memory_order_acq_rel) & kDone)) return;
      // Completed in between, without seeing kCallbacks: it will not look; run it here.
      cb = std::move(callbacks_.back());
      callbacks_.pop_back();
    }
  }
  cb(*this);
}

}  // namespace collie
