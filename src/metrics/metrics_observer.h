#pragma once
// The observer that turns op events into metrics (Metrics) and live per-group status
// (LiveStatus). One instance for the process is registered with add_op_observer at load time;
// tests may build their own over their own Metrics/LiveStatus (ranks as threads).
// Thread safety: as OpObserver (hot-path calls are lock-free and allocation-free).
#include "metrics/live_status.h"
#include "metrics/metrics.h"
#include "metrics/op_observer.h"

namespace collie {

class MetricsObserver : public OpObserver {
 public:
  // REQUIRES: metrics and live outlive the observer.
  MetricsObserver(Metrics& metrics, LiveStatus& live) : metrics_(metrics), live_(live) {}

  void on_group_created(const GroupInfo& group) override;
  void on_started(const GroupInfo& group, const OpCall& call) override;
  void on_completed(const GroupInfo& group, const OpCall& call,
                    std::chrono::nanoseconds duration) override;
  void on_failed(const GroupInfo& group, const OpCall& call, std::chrono::nanoseconds duration,
                 std::exception_ptr error) override;

  // Bytes this rank moves for `call` (the larger of input and output).
  static uint64_t op_bytes(const OpCall& call);

 private:
  int backend_of(const GroupInfo& group);
  Metrics& metrics_;
  LiveStatus& live_;
};

}  // namespace collie
