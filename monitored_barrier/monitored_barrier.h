#pragma once
// monitored_barrier: a host-side barrier through the group's store that names the ranks that did
// not arrive (torch.distributed.monitored_barrier), on any backend.
//
// Rank 0 collects arrivals and publishes the outcome; the others wait for it. With
// wait_all_ranks = false rank 0 fails fast on the first (lowest) missing rank; with true it names
// every missing rank, still within one `timeout` (torch needs up to (N-1) x timeout).
//   rank 0: TimeoutError "[Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 2000 ms"
//   others: TimeoutError pointing at rank 0's report (or saying rank 0 itself did not answer).
// Every rank whose call throws its TimeoutError counts it in the process's metrics
// (collie_monitored_barrier_timeouts_total, src/metrics).
// REQUIRES: every rank of the group calls it, in the same order relative to other monitored
// barriers of the group. Thread safety: one call per group at a time.
#include "comm/process_group.h"
#include "core/export.h"

namespace collie {

COLLIE_API void monitored_barrier(ProcessGroup& group, Millis timeout = kUseGroupTimeout,
                                  bool wait_all_ranks = false);

}  // namespace collie
