#pragma once
// TracingProcessGroup: the always-on wrapper next to the backend. For every op it
//   - updates the group's last enqueued/started/completed seq (GroupTrace),
//   - records scheduled -> started -> completed in the flight recorder,
//   - gives the op a deadline in the watchdog (which fails the Work on expiry),
//   - asks for a flight-recorder dump when the op fails,
//   - notifies the OpObservers it was given (the stack gives it the metrics observer when the
//     process's debug server serves metrics, src/stack/stack.h).
// Every group gets it from the stack (src/stack/stack.cpp), which for the world group (pg "0")
// also starts the DumpService (SIGUSR1, store `dump_request`).
// Ownership: shares the inner group; the GroupTrace is shared with the recorder.
// Thread safety: as ProcessGroup.
// Cost: an op allocates nothing here; an async op's completion state waits in one of its group's
// kPendingSlots slots (a heap one only while more ops than that are in flight at once; a slot
// whose Work is destroyed without ever completing stays taken). A Work in a slot holds no
// reference to the group's state (that would cost two locked instructions per op): a group
// destroyed while a slot is taken leaves its state to the process (keep_for_in_flight_ops).
#include <array>
#include <atomic>
#include <memory>

#include "comm/wrapper.h"
#include "debug/flight_recorder.h"
#include "debug/op_observer.h"

namespace collie {

class Watchdog;

class TracingProcessGroup : public ProcessGroupWrapper {
 public:
  // recorder/watchdog default to the process-wide ones; `observers` are called for every op
  // (none by default).
  explicit TracingProcessGroup(std::shared_ptr<ProcessGroup> inner,
                               FlightRecorder* recorder = nullptr, Watchdog* watchdog = nullptr,
                               std::vector<std::shared_ptr<OpObserver>> observers = {});

  ~TracingProcessGroup() override;

  const std::shared_ptr<GroupTrace>& trace() const { return shared_->trace; }

 protected:
  void before(const OpCall& call) override;
  std::shared_ptr<Work> after(const OpCall& call, std::shared_ptr<Work> work) override;
  void failed(const OpCall& call, std::exception_ptr error) override;

 private:
  struct InFlight {
    uint64_t record = 0;
    uint64_t token = 0;
    int64_t created_ns = 0;
  };
  struct Shared;
  struct Done {
    InFlight f;
    OpType op;
    uint64_t seq;
    size_t bytes;
    DType dtype;
    bool in_metrics;
    void finish(Shared& shared, std::exception_ptr error) const;
  };
  // An async op's Done until its Work completes. `busy` is set by the submitting thread and
  // cleared (release) by the completing one as the last thing it does with the group's state.
  struct Pending {
    std::atomic<bool> busy{false};
    Shared* shared = nullptr;
    Done done{};
  };
  static constexpr size_t kPendingSlots = 64;
  // What completion needs. A Work may outlive this group: an allocated slot's Work holds this
  // state; a Work in a pending slot does not, and the group's destructor keeps the state for
  // the process when any slot is still taken.
  struct Shared {
    FlightRecorder* fr = nullptr;
    Watchdog* watchdog = nullptr;
    std::vector<std::shared_ptr<OpObserver>> observers;
    std::shared_ptr<GroupTrace> trace;
    std::array<Pending, kPendingSlots> pending;
  };
  // A free slot of shared_->pending, claimed for the caller; nullptr when all are in use.
  Pending* claim_pending();
  static void complete_pending(Work& w, void* pending);
  static void complete_allocated(Work& w, void* pending);
  std::shared_ptr<Shared> shared_;
  uint64_t op_id_ = 0;
  size_t next_pending_ = 0;  // submitting thread only
  InFlight current_;         // between before() and after()/failed(); submits are single-threaded
};

}  // namespace collie
