#pragma once
// Deadline for blocking MPI calls. A blocking MPI collective cannot be interrupted, so when a
// synchronous op outlives its timeout the only way not to hang forever is to report it and end
// the job: the watchdog thread calls `on_expire` once (the group prints the TimeoutError text
// and calls MPI_Abort) at the deadline. Arming costs a clock read and four atomic stores. The
// thread wakes only at an armed op's deadline or, idle, after the shortest timeout armed so far
// (it polled every 50 ms before: 20 preemptions a second of a rank that spins in MPI); an op
// armed with a shorter timeout than any before wakes it (a mutex and a notify, once).
// Thread safety: arm/disarm from the one submitting thread; the watchdog runs its own thread.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
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
  // The shortest timeout arm() has seen (max: none yet); written under mu_.
  std::atomic<int64_t> shortest_timeout_ns_{std::numeric_limits<int64_t>::max()};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  WorkerThread thread_;
};

}  // namespace collie
