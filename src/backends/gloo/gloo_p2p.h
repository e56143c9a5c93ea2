#pragma once
// P2PWaiterPool: completes posted Gloo send/recv operations. Each op in flight gets its own
// waiter thread (threads are reused; the pool grows to the number of ops in flight), so a Work
// completes as soon as its own transfer does, whatever order the caller waits in.
// Ownership: owns its threads; the destructor aborts pending waits and joins.
// Thread safety: all methods may be called from any thread.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace gloo::transport {
class UnboundBuffer;
}

namespace collie {

// Slots for send/recv: a prefix Gloo's collectives never use, with the user tag in the low bits.
uint64_t p2p_slot(int tag);

struct PendingP2P {
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
  bool is_send = false;
  // Called once with the outcome: nullptr = success; `aborted` = the pool stopped first.
  std::function<void(std::exception_ptr error, bool aborted)> done;
  std::chrono::milliseconds timeout{0};
};

class P2PWaiterPool {
 public:
  P2PWaiterPool() = default;
  ~P2PWaiterPool();
  P2PWaiterPool(const P2PWaiterPool&) = delete;
  P2PWaiterPool& operator=(const P2PWaiterPool&) = delete;

  // REQUIRES: op->buffer has its send/recv posted.
  void wait_for(std::shared_ptr<PendingP2P> op);
  // Aborts every pending wait (their Works fail) and stops the threads. Idempotent.
  void stop();

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<PendingP2P>> queue_;
  std::set<std::shared_ptr<PendingP2P>> active_;
  std::vector<std::thread> threads_;
  int idle_ = 0;
  bool stopping_ = false;
};

}  // namespace collie
