#include "backends/gloo/gloo_p2p.h"

#include <gloo/transport/unbound_buffer.h>

#include "core/thread_name.h"

namespace collie {

uint64_t p2p_slot(int tag) {
  constexpr uint64_t kP2PSlotPrefix = 0x20;  // Gloo's collectives use 0x01-0x08
  return (kP2PSlotPrefix << 56) | static_cast<uint32_t>(tag);
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
    op->done(error, !ok && !error);
    lk.lock();
    active_.erase(op);
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
