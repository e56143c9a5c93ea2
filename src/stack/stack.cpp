#include "stack/stack.h"

#include "debug/desync_checking_process_group.h"
#include "debug/dump_service.h"
#include "debug/tracing_process_group.h"
#include "debug_server/auto_start.h"
#include "metrics/group_hosts.h"
#include "metrics/metrics_observer.h"

namespace collie {

std::shared_ptr<ProcessGroup> build_stack(std::shared_ptr<ProcessGroup> backend,
                                          const BackendArgs& args) {
  std::shared_ptr<ProcessGroup> pg = std::move(backend);
  publish_group_host(*pg);                              // n_nodes of the Inspector series
  pg = with_desync_checks(std::move(pg), args);         // DETAIL only
  auto traced = std::make_shared<TracingProcessGroup>(  // always
      std::move(pg), nullptr, nullptr, stack_observers(args));
  if (traced->info().name == "0") {  // the world group: SIGUSR1 and store dump requests
    DumpService::global().start(traced->trace()->global_rank, traced->info().store);
  }
  start_debug_server_if_asked(*traced, args);  // world group, when a port is configured
  return traced;
}

std::vector<std::shared_ptr<OpObserver>> stack_observers(bool metrics_served) {
  if (!metrics_served) return {};
  return {process_metrics_observer()};
}

std::vector<std::shared_ptr<OpObserver>> stack_observers(const BackendArgs& args) {
  return stack_observers(debug_server_configured(args));
}

}  // namespace collie
