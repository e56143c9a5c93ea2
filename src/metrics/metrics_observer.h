#pragma once
// The OpObserver that turns op events from the TracingProcessGroup into Prometheus metrics
// (Metrics), NCCL Inspector-compatible series (InspectorMetrics) and live per-group status
// (LiveStatus). The process's one instance (process_metrics_observer) is given to every traced
// group by the stack; tests build their own over their own Metrics/LiveStatus (ranks as threads).
// Failed ops whose error is a DesyncError (COLLIE_DEBUG=DETAIL) also count in
// collie_desync_detected_total.
// Thread safety: as OpObserver. After a group's first op, callbacks are lock-free and
// allocation-free on success (a failure may lock to count a desync).
#include <array>
#include <atomic>
#include <memory>

#include "debug/op_observer.h"
#include "metrics/inspector_metrics.h"
#include "metrics/live_status.h"
#include "metrics/metrics.h"

namespace collie {

class MetricsObserver : public OpObserver {
 public:
  // REQUIRES: metrics, live and inspector (when given) outlive the observer.
  MetricsObserver(Metrics& metrics, LiveStatus& live, InspectorMetrics* inspector = nullptr)
      : metrics_(metrics), live_(live), inspector_(inspector) {}

  void on_op_scheduled(const OpEvent& e) override;
  void on_op_completed(const OpEvent& e) override;

 private:
  // Registers the group on first sight (locks and allocates once per group).
  int slot_of(const GroupTrace& g);
  // The group's backend index, so an op compares no strings.
  int backend_of(int slot, const GroupTrace& g) const;
  Metrics& metrics_;
  LiveStatus& live_;
  InspectorMetrics* inspector_;
  // By LiveStatus slot: backend index + 1 (0: not stored yet, look it up by name).
  std::array<std::atomic<int>, LiveStatus::kMaxGroups> backend_plus_1_{};
};

// The process's observer (Metrics::global(), LiveStatus::global(), InspectorMetrics::global()),
// which the stack gives every TracingProcessGroup. Never destroyed (Works may complete during
// exit); the shared_ptr does not own it.
std::shared_ptr<OpObserver> process_metrics_observer();

}  // namespace collie
