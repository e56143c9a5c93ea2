#pragma once
// monitored_barrier: a host-side barrier through the group's store that names the ranks that did
// not arrive (torch.distributed.monitored_barrier), on any backend.
//
// Rank 0 collects arrivals and publishes the outcome; the others wait for it. With
// wait_all_ranks = false rank 0 fails fast on the first (lowest) missing rank; with true it names
// every missing rank, still within one `timeout` (torch needs up to (N-1) x timeout).
//   rank 0: TimeoutError "[Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 2000 ms"
//   others: TimeoutError pointing at rank 0's report (or saying rank 0 itself did not answer).
// REQUIRES: every rank of the group calls it, in the same order relative to other monitored
// barriers of the group. Thread safety: one call per group at a time.
#include "comm/process_group.h"
#include "core/export.h"

namespace collie {

COLLIE_API void monitored_barrier(ProcessGroup& group, Millis timeout = kUseGroupTimeout,
                                  bool wait_all_ranks = false);

// Called on every rank whose monitored_barrier is about to throw its TimeoutError (rank 0 naming
// the missing ranks, the others pointing at rank 0), so instrumentation above this module counts
// it (collie_monitored_barrier_timeouts_total). REQUIRES: must not block or throw. Thread-safe
// (an atomic pointer; nullptr removes the hook).
using MonitoredBarrierTimeoutHook = void (*)(const ProcessGroup& group);
COLLIE_API void set_monitored_barrier_timeout_hook(MonitoredBarrierTimeoutHook hook);

}  // namespace collie
