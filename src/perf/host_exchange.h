#pragma once
// Collectives over small host-side values (host names, per-rank results, the soak's stop flag)
// on a group whose buffers may live on a device: when the group's runtime is not host memory the
// data is staged through device buffers (one copy each way); on the host the views are used as
// they are. Every rank of `pg` must make the same calls in the same order. The ops are perf's
// bookkeeping: recorded and watched, not counted in /metrics (CommonOptions::in_metrics).
#include "comm/process_group.h"

namespace collie::perf {

// REQUIRES: `in`, `out` are host views; out.numel == in.numel * pg.size().
void all_gather_host(ProcessGroup& pg, TensorView in, TensorView out, Millis timeout);
// REQUIRES: `data` is a host view.
void broadcast_host(ProcessGroup& pg, TensorView data, int root, Millis timeout);

}  // namespace collie::perf
