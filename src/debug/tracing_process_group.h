#pragma once
// TracingProcessGroup: the always-on wrapper next to the backend. For every op it
//   - updates the group's last enqueued/started/completed seq (GroupTrace),
//   - records scheduled -> started -> completed in the flight recorder,
//   - gives the op a deadline in the watchdog (which fails the Work on expiry),
//   - asks for a flight-recorder dump when the op fails,
//   - notifies the OpObservers it was given (the stack gives it the metrics observer).
// Every group gets it from the stack (src/stack/stack.cpp), which for the world group (pg "0")
// also starts the DumpService (SIGUSR1, store `dump_request`).
// Ownership: shares the inner group; the GroupTrace is shared with the recorder.
// Thread safety: as ProcessGroup.
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
  // What completion needs; shared so a Work may outlive this group.
  struct Shared {
    FlightRecorder* fr = nullptr;
    Watchdog* watchdog = nullptr;
    std::vector<std::shared_ptr<OpObserver>> observers;
    std::shared_ptr<GroupTrace> trace;
  };
  struct Done {
    InFlight f;
    OpType op;
    uint64_t seq;
    size_t bytes;
    DType dtype;
    bool in_metrics;
    void finish(Shared& shared, std::exception_ptr error) const;
  };
  std::shared_ptr<Shared> shared_;
  uint64_t op_id_ = 0;
  InFlight current_;  // between before() and after()/failed(); submits are single-threaded
};

}  // namespace collie
