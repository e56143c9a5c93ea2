#pragma once
// NcclWork: one op enqueued on the group's CUDA stream, bracketed by two CUDA events. It
// advances when polled: cudaEventQuery on the end event; meanwhile ncclCommGetAsyncError is
// checked, and past the op's deadline the communicator is aborted (ncclCommAbort) so the stream
// drains and the Work completes with a TimeoutError instead of hanging.
// Thread safety: progress() may run on several threads; one polls at a time.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "comm/work.h"

namespace collie {

// The communicator shared by a group and its in-flight Works (a Work may abort it).
struct NcclCommState {
  ncclComm_t comm = nullptr;
  int device = 0;
  std::mutex mu;
  // Set (release) under mu, with abort_reason, when the communicator is aborted or shut down;
  // an op's submission reads it without the lock (acquire), so the fast path takes none.
  std::atomic<bool> aborted{false};
  // Aborts once; returns the reason recorded by the first abort.
  void abort(const std::string& why);
  std::string abort_reason;  // guarded by mu
  // The error of an op that finds the communicator aborted. REQUIRES: mu held.
  std::string aborted_error(const std::string& label) const;
};

class NcclWork : public Work {
 public:
  // Creates (with timing) and owns the start/end events. REQUIRES: current device = comm's.
  NcclWork(OpType op, uint64_t seq, Millis timeout, std::string label,
           std::shared_ptr<NcclCommState> comm);
  ~NcclWork() override;

  cudaEvent_t start_event() const { return start_; }
  cudaEvent_t end_event() const { return end_; }
  // Device time between the two events in milliseconds; REQUIRES: completed successfully.
  float elapsed_ms() const;

 protected:
  void progress() override;
  bool needs_polling() const override { return true; }

 private:
  const std::string label_;
  std::shared_ptr<NcclCommState> comm_;
  const std::chrono::steady_clock::time_point deadline_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t end_ = nullptr;
  std::mutex poll_mu_;
};

}  // namespace collie
