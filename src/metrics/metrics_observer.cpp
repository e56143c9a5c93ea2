#include "metrics/metrics_observer.h"

#include <algorithm>

namespace collie {

uint64_t MetricsObserver::op_bytes(const OpCall& call) {
  return std::max(call.input.nbytes(), call.output.nbytes());
}

int MetricsObserver::backend_of(const GroupInfo& group) {
  // Registered at group creation; a group the observer never saw created registers on first use.
  const int b = metrics_.find_backend(group.backend);
  return b >= 0 ? b : metrics_.backend_index(group.backend);
}

void MetricsObserver::on_group_created(const GroupInfo& group) {
  if (group.name == "0" || metrics_.rank() < 0) {
    metrics_.set_rank(group.global_ranks.empty() ? group.rank : group.global_ranks.at(group.rank));
  }
  metrics_.backend_index(group.backend);
  live_.add_group(group);
}

void MetricsObserver::on_started(const GroupInfo& group, const OpCall& call) {
  int slot = live_.find_group(group);
  if (slot < 0) slot = live_.add_group(group);
  live_.started(slot, call, op_bytes(call));
}

void MetricsObserver::on_completed(const GroupInfo& group, const OpCall& call,
                                   std::chrono::nanoseconds duration) {
  metrics_.record_op(backend_of(group), call.type, op_bytes(call), duration);
  live_.finished(live_.find_group(group), call, true);
}

void MetricsObserver::on_failed(const GroupInfo& group, const OpCall& call,
                                std::chrono::nanoseconds duration, std::exception_ptr error) {
  (void)duration;
  (void)error;
  metrics_.record_error(backend_of(group), call.type, op_bytes(call));
  live_.finished(live_.find_group(group), call, false);
}

}  // namespace collie
