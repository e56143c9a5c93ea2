#pragma once
// OpObserver: what instrumentation (metrics, live status) sees of every op. The layer that traces
// ops (TracingProcessGroup) calls notify_*; observers never see backends directly.
//
// Ownership: observers are registered once for the life of the process (add_op_observer keeps a
// raw pointer; REQUIRES: the observer outlives every process group, e.g. a static).
// Thread safety: notify_* may be called from any thread concurrently; registration is guarded,
// and notification reads a fixed array without locks, so the hot path never allocates or blocks.
#include <chrono>
#include <exception>

#include "comm/op.h"
#include "comm/process_group.h"

namespace collie {

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  // Once per group, before its first op; may allocate (not on the hot path).
  virtual void on_group_created(const GroupInfo& group) { (void)group; }
  // The backend accepted the op (it may still be queued inside the backend).
  virtual void on_started(const GroupInfo& group, const OpCall& call) = 0;
  // duration: from on_started to completion, measured by the caller.
  virtual void on_completed(const GroupInfo& group, const OpCall& call,
                            std::chrono::nanoseconds duration) = 0;
  // The op failed (backend error, timeout, desync); `error` may be null when unknown.
  virtual void on_failed(const GroupInfo& group, const OpCall& call,
                         std::chrono::nanoseconds duration, std::exception_ptr error) = 0;
};

inline constexpr int kMaxOpObservers = 8;

// Returns false (and logs nothing) when kMaxOpObservers are already registered or `o` is.
bool add_op_observer(OpObserver* o);

void notify_group_created(const GroupInfo& group);
void notify_op_started(const GroupInfo& group, const OpCall& call);
void notify_op_completed(const GroupInfo& group, const OpCall& call,
                         std::chrono::nanoseconds duration);
void notify_op_failed(const GroupInfo& group, const OpCall& call, std::chrono::nanoseconds duration,
                      std::exception_ptr error);

}  // namespace collie
