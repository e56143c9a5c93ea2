#include "metrics/metrics_observer.h"

#include <chrono>
#include <memory>

#include "core/error.h"

namespace collie {

int MetricsObserver::slot_of(const GroupTrace& g) {
  const int slot = live_.find_group(g);
  if (slot >= 0) return slot;
  if (g.pg_id == "0" || metrics_.rank() < 0) metrics_.set_rank(g.global_rank);
  const int backend = metrics_.backend_index(g.backend);
  const int added = live_.add_group(g);
  if (added >= 0) backend_plus_1_[added].store(backend + 1, std::memory_order_relaxed);
  return added;
}

int MetricsObserver::backend_of(int slot, const GroupTrace& g) const {
  const int b = slot >= 0 ? backend_plus_1_[slot].load(std::memory_order_relaxed) - 1 : -1;
  return b >= 0 ? b : metrics_.find_backend(g.backend);
}

void MetricsObserver::on_op_scheduled(const OpEvent& e) {
  if (e.group == nullptr) return;
  live_.started(slot_of(*e.group), e.op, e.seq, e.bytes, e.created_ns);
}

void MetricsObserver::on_op_completed(const OpEvent& e) {
  if (e.group == nullptr) return;
  const int slot = slot_of(*e.group);
  const int backend = backend_of(slot, *e.group);
  if (!e.in_metrics) {
    // A tool's own coordination: live status only (what the rank is in), no counters.
  } else if (e.failed) {
    metrics_.record_error(backend, e.op, e.bytes);
    if (e.error) {
      try {
        std::rethrow_exception(e.error);
      } catch (const DesyncError&) {
        metrics_.record_desync(e.group->backend);  // collie_desync_detected_total
      } catch (...) {
      }
    }
  } else {
    const std::chrono::nanoseconds took(e.completed_ns - e.created_ns);
    metrics_.record_op(backend, e.op, e.bytes, took);
    if (inspector_ != nullptr) inspector_->record(slot, *e.group, e.op, e.bytes, took);
  }
  live_.finished(slot, e.op, e.seq, !e.failed, e.completed_ns);
}

std::shared_ptr<OpObserver> process_metrics_observer() {
  // Never destroyed: Works may complete during exit. The no-op deleter keeps ownership here.
  static MetricsObserver* o =
      new MetricsObserver(Metrics::global(), LiveStatus::global(), &InspectorMetrics::global());
  return std::shared_ptr<OpObserver>(o, [](OpObserver*) {});
}

}  // namespace collie
