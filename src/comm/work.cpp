#include "comm/work.h"

#include <fmt/format.h>

#include <chrono>

#include "core/error.h"

namespace collie {

Work::Work(OpType op, uint64_t seq, Millis timeout) : op_(op), seq_(seq), timeout_(timeout) {}

bool Work::is_completed() {
  if (done_.load(std::memory_order_acquire)) return true;
  progress();
  return done_.load(std::memory_order_acquire);
}

bool Work::is_success() { return is_completed() && error_ == nullptr; }

std::exception_ptr Work::exception() {
  // error_ is set before done_ and never changes after: no lock once done.
  return done_.load(std::memory_order_acquire) ? error_ : nullptr;
}

void Work::wait(Millis timeout) {
  const Millis limit = timeout == kUseGroupTimeout ? timeout_ : timeout;
  std::unique_lock<std::mutex> lk(mu_);
  // A Work that is already complete (every inline op) reads no clock.
  const auto deadline =
      done_ ? std::chrono::steady_clock::time_point{} : std::chrono::steady_clock::now() + limit;
  while (!done_) {
    const bool past = std::chrono::steady_clock::now() >= deadline;
    if (needs_polling()) {
      // A polled op acts on its own deadline inside progress() (NCCL aborts its communicator
      // there), a deadline set when the op was issued, so no later than this one: it is polled
      // once more after this deadline has passed before the wait gives up on it.
      lk.unlock();
      progress();
      lk.lock();
      if (done_ || past) break;
      cv_.wait_for(lk, std::chrono::microseconds(50));
    } else {
      if (past) break;
      cv_.wait_until(lk, deadline);
    }
  }
  if (!done_) {
    throw TimeoutError(fmt::format(
        "[Rank {}] {} #{} did not complete within {} ms; some rank may not have called it "
        "(set COLLIE_DEBUG=DETAIL to check, or run `collie analyze` on the flight-recorder dumps)",
        rank_, op_name(op_), seq_, limit.count()));
  }
  if (error_) std::rethrow_exception(error_);
}

bool Work::complete(std::exception_ptr error) {
  std::vector<std::function<void(Work&)>> cbs;
  CompletionFn fn = nullptr;
  void* ctx = nullptr;
  std::shared_ptr<void> owner;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (done_.load(std::memory_order_relaxed)) return false;
    error_ = std::move(error);
    done_.store(true, std::memory_order_release);
    cbs.swap(callbacks_);
    std::swap(fn, hook_fn_);
    std::swap(ctx, hook_ctx_);
    owner.swap(hook_owner_);
  }
  cv_.notify_all();
  for (auto& cb : cbs) cb(*this);
  if (fn != nullptr) fn(*this, ctx);
  return true;
}

void Work::set_completion_hook(CompletionFn fn, void* ctx, std::shared_ptr<void> owner) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!done_ && hook_fn_ == nullptr) {
      hook_fn_ = fn;
      hook_ctx_ = ctx;
      hook_owner_ = std::move(owner);
      return;
    }
    if (!done_) {  // a second hook: an ordinary callback (this one allocates)
      callbacks_.push_back([fn, ctx, owner = std::move(owner)](Work& w) { fn(w, ctx); });
      return;
    }
  }
  fn(*this, ctx);
}

void Work::on_complete(std::function<void(Work&)> cb) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!done_) {
      callbacks_.push_back(std::move(cb));
      return;
    }
  }
  cb(*this);
}

}  // namespace collie
