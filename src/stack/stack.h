#pragma once
// The wrapper stack every process group gets, declared in one place (stack.cpp). An op from the
// caller passes through the layers top to bottom:
//
//   caller ─▶ TracingProcessGroup   always: seq tracking, flight recorder, watchdog deadline,
//             │                     dump on failure, OpObservers (stack_observers: metrics,
//             │                     when the process's debug server serves them)
//             │                                                               (src/debug)
//             ▼
//             DesyncCheckingProcessGroup   DETAIL only: op, shapes, dtypes, roots and peers
//             │                            checked across ranks first          (src/debug)
//             ▼
//             backend (gloo / mpi / nccl)                                      (src/backends)
//
// Before wrapping, each rank publishes its host name in the group's store (metrics/group_hosts.h,
// the n_nodes label of the Inspector series). Desync checks sit below tracing, so the flight
// recorder also records the ops whose check fails and `collie analyze` sees the mismatch. After
// wrapping the world group the stack starts the process's DumpService (debug/dump_service.h) and
// its debug server when one is configured (debug_server/auto_start.h). Each layer is built here
// from what it is given; nothing is installed by registration. init_process_group and new_group
// (stack/init.h) call build_stack on every group they create; the test harness calls it too.
#include <memory>
#include <vector>

#include "comm/registry.h"  // BackendArgs
#include "debug/op_observer.h"

namespace collie {

// `backend` wrapped in the stack above. Thread-safe; REQUIRES: backend != nullptr.
std::shared_ptr<ProcessGroup> build_stack(std::shared_ptr<ProcessGroup> backend,
                                          const BackendArgs& args);

// The observers the stack gives a TracingProcessGroup: the process's metrics observer when the
// process serves metrics (metrics_served: it has a debug server or one is configured,
// debug_server_configured), else none. The debug server is the only reader of the process's
// Metrics, LiveStatus and InspectorMetrics, so without one an op skips filling them (~40 ns of
// its bookkeeping, scripts/bench/layers.sh). Benchmarks that build a traced group by hand pass
// what the stack's groups would get, to pay what they pay.
std::vector<std::shared_ptr<OpObserver>> stack_observers(bool metrics_served);
// What build_stack gives a group built with `args` (metrics_served decided from them).
std::vector<std::shared_ptr<OpObserver>> stack_observers(const BackendArgs& args);

}  // namespace collie
