#include "stack/stack.h"

#include "debug/desync_checking_process_group.h"
#include "debug/tracing_process_group.h"
#include "debug_server/auto_start.h"
#include "metrics/group_hosts.h"
#include "metrics/metrics.h"
#include "monitored_barrier/monitored_barrier.h"

namespace collie {

std::shared_ptr<ProcessGroup> build_stack(std::shared_ptr<ProcessGroup> backend,
                                          const BackendArgs& args) {
  std::shared_ptr<ProcessGroup> pg = std::move(backend);
  publish_group_host(*pg);                       // n_nodes of the Inspector series
  pg = with_desync_checks(std::move(pg), args);  // DETAIL only
  pg = with_tracing(std::move(pg));              // always
  start_debug_server_if_asked(*pg, args);        // world group, when a port is configured
  return pg;
}

namespace {

const bool kStackInstalled = set_stack_builder(&build_stack);

// Instrumentation glue: monitored_barrier and metrics are siblings over comm (neither includes
// the other), so the barrier's timeouts reach collie_monitored_barrier_timeouts_total here.
const bool kBarrierHook = [] {
  set_monitored_barrier_timeout_hook(
      [](const ProcessGroup& g) { Metrics::global().record_barrier_timeout(g.info().backend); });
  return true;
}();

}  // namespace
}  // namespace collie
