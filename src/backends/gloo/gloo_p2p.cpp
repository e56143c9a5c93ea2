#include "backends/gloo/gloo_p2p.h"

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include "core/thread_name.h"

namespace collie {

uint64_t p2p_slot(int tag) {
  constexpr uint64_t kP2PSlotPrefix = 0x20;  // Gloo's collectives use 0x01-0x08
  return (kP2PSlotPrefix << 56) | static_cast<uint32_t>(tag);
}

UnboundBufferPool::~UnboundBufferPool() = default;

std::unique_ptr<gloo::transport::UnboundBuffer> UnboundBufferPool::acquire(void* ptr,
                                                                           size_t bytes) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      if ((*it)->ptr == ptr && (*it)->size == bytes) {
        auto b = std::move(*it);
        idle_.erase(it);
        return b;
      }
    }
  }
  return ctx_->createUnboundBuffer(ptr, bytes);
}

void UnboundBufferPool::release(std::unique_ptr<gloo::transport::UnboundBuffer> b) {
  std::unique_ptr<gloo::transport::UnboundBuffer> evicted;
  {
    std::lock_guard<std::mutex> lk(mu_);
    idle_.push_front(std::move(b));
    if (idle_.size() > kCapacity) {
      evicted = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  // `evicted` is destroyed here, outside the lock (its destructor may wait for the I/O thread).
}

size_t UnboundBufferPool::idle() const {
  std::lock_guard<std::mutex> lk(mu_);
  return idle_.size();
}

P2PWaiterPool::~P2PWaiterPool() { stop(); }

void P2PWaiterPool::wait_for(std::shared_ptr<PendingP2P> op) {
  std::unique_lock<std::mutex> lk(mu_);
  if (stopping_) {
    lk.unlock();
    op->done(nullptr, true);
    return;
  }
  queue_.push_back(std::move(op));
  if (idle_ == 0) {
    threads_.emplace_back([this] {
      name_this_thread("collie-gloo-p2p");
      loop();
    });
  } else {
    cv_.notify_one();
  }
}

void P2PWaiterPool::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  while (true) {
    ++idle_;
    cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) return;  // stopping
    auto op = std::move(queue_.front());
    queue_.pop_front();
    active_.insert(op);
    lk.unlock();
    std::exception_ptr error;
    bool ok = false;
    try {
      ok = op->is_send ? op->buffer->waitSend(op->timeout) : op->buffer->waitRecv(op->timeout);
    } catch (...) {
      error = std::current_exception();
    }
    lk.lock();
    active_.erase(op);  // stop() aborts only waits still in progress
    lk.unlock();
    // Back to the pool before the Work completes, so the caller's next op on this memory finds it.
    if (ok && !error && op->pool != nullptr) op->pool->release(std::move(op->buffer));
    op->done(error, !ok && !error);
    lk.lock();
  }
}

void P2PWaiterPool::stop() {
  std::deque<std::shared_ptr<PendingP2P>> orphans;
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    orphans.swap(queue_);
    for (const auto& op : active_) {
      if (op->is_send) {
        op->buffer->abortWaitSend();
      } else {
        op->buffer->abortWaitRecv();
      }
    }
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (auto& op : orphans) op->done(nullptr, true);
  for (auto& t : threads) t.join();
}

}  // namespace collie
