#pragma once
// OpObserver: the hook through which the TracingProcessGroup reports every op to consumers
// other than the flight recorder (Prometheus metrics, the debug server).
//
// Each TracingProcessGroup is given its observers when it is built (the stack passes the
// process's metrics observer, src/stack/stack.cpp); there is no process-wide list. Callbacks run
// on the hot path (the submitting thread, or the backend thread that completes the Work): they
// must not block, do I/O or throw. Thread safety: callbacks may run concurrently.
#include <cstdint>
#include <exception>

#include "comm/op.h"

namespace collie {

struct GroupTrace;

struct OpEvent {
  const GroupTrace* group = nullptr;
  const OpCall* call = nullptr;  // valid only during on_op_scheduled
  OpType op = OpType::Barrier;
  uint64_t seq = 0;
  size_t bytes = 0;  // input bytes on this rank
  DType dtype = DType::Float32;
  // Clock::mono_ns of the recorder's clock: the process's steady clock (steady_now_ns in
  // live_status.h) unless a test gave the recorder a FakeClock.
  int64_t created_ns = 0;
  int64_t completed_ns = 0;  // on_op_completed only
  bool failed = false;       // on_op_completed only
  std::exception_ptr error;  // on_op_completed of a failed op: why (DesyncError, TimeoutError...)
  bool in_metrics = true;    // OpCall::in_metrics: false for a tool's own coordination
};

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  virtual void on_op_scheduled(const OpEvent& e) { (void)e; }
  virtual void on_op_completed(const OpEvent& e) { (void)e; }
};

}  // namespace collie
