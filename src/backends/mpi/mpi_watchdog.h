#pragma once
// Deadline for blocking MPI calls. A blocking MPI collective cannot be interrupted, so when a
// synchronous op outlives its timeout the only way not to hang forever is to report it and end
// the job: the watchdog thread calls `on_expire` once (the group prints the TimeoutError text
// and calls MPI_Abort). Arming costs a clock read and three atomic stores.
// Thread safety: arm/disarm from the one submitting thread; the watchdog runs its own thread.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

#include "comm/op.h"
#include "core/worker_thread.h"

namespace collie {

class MpiWatchdog {
 public:
  using OnExpire = std::function<void(OpType op, uint64_t seq, Millis timeout)>;
  explicit MpiWatchdog(OnExpire on_expire);
  ~MpiWatchdog();
  MpiWatchdog(const MpiWatchdog&) = delete;
  MpiWatchdog& operator=(const MpiWatchdog&) = delete;

  void arm(OpType op, uint64_t seq, Millis timeout);
  void disarm() { deadline_ns_.store(0, std::memory_order_release); }

 private:
  void loop();
  OnExpire on_expire_;
  std::atomic<int64_t> deadline_ns_{0};  // steady_clock; 0 = nothing armed
  std::atomic<uint64_t> seq_{0};
  std::atomic<int64_t> timeout_ms_{0};
  std::atomic<uint8_t> op_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  WorkerThread thread_;
};

}  // namespace collie
