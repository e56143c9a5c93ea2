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

namespace gloo {
class Context;
namespace transport {
class UnboundBuffer;
}
}  // namespace gloo

namespace collie {

// Slots for send/recv: a prefix Gloo's collectives never use, with the user tag in the low bits.
uint64_t p2p_slot(int tag);

// Idle unbound buffers for send/recv, reused per (address, bytes) for the reason PreparedOps
// reuses options (gloo_prepared.h): destroying a buffer right after its op spins until libgloo's
// I/O thread lets go of it. A buffer is in at most one op at a time: acquire() takes it out of
// the pool, release() puts it back once its op succeeded (a failed op's buffer is destroyed).
// Bounded: at most kCapacity idle buffers; the least recently released goes first.
// Thread safety: all methods may be called from any thread.
class UnboundBufferPool {
 public:
  static constexpr size_t kCapacity = 64;
  explicit UnboundBufferPool(std::shared_ptr<gloo::Context> ctx) : ctx_(std::move(ctx)) {}
  ~UnboundBufferPool();
  UnboundBufferPool(const UnboundBufferPool&) = delete;
  UnboundBufferPool& operator=(const UnboundBufferPool&) = delete;

  // An idle buffer over exactly [ptr, ptr + bytes), or a new one. Throws libgloo's errors.
  std::unique_ptr<gloo::transport::UnboundBuffer> acquire(void* ptr, size_t bytes);
  // REQUIRES: `b` came from acquire() and nothing is pending on it.
  void release(std::unique_ptr<gloo::transport::UnboundBuffer> b);
  size_t idle() const;

 private:
  std::shared_ptr<gloo::Context> ctx_;
  mutable std::mutex mu_;
  std::deque<std::unique_ptr<gloo::transport::UnboundBuffer>> idle_;  // front: latest released
};

struct PendingP2P {
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
  UnboundBufferPool* pool = nullptr;  // where `buffer` goes back after a successful wait
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
