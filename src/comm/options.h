#pragma once
// One plain options struct per verb (Gloo style); defaults mean "the usual thing" and
// timeout = kUseGroupTimeout means the group's timeout.
#include <span>

#include "core/reduce_op.h"
#include "core/timeout.h"

namespace collie {

struct CommonOptions {
  Millis timeout = kUseGroupTimeout;
  bool async_op = false;  // request background execution; wait() on the Work either way
  // false: a tool's own coordination (collie perf's result exchange, its barriers, replay's
  // pass barrier), not the work being measured: not counted in /metrics and /metrics/inspector.
  // Everything else sees it like any op: the flight recorder, DETAIL's checks, the watchdog (a
  // hang in bookkeeping is still a hang), live status (/v1/status, collie_inflight_ops).
  bool in_metrics = true;
};
struct AllReduceOptions : CommonOptions {
  ReduceOp op = ReduceOp::Sum;
  double premul_factor = 1.0;
};
struct ReduceOptions : AllReduceOptions {
  int root = 0;
};
struct ReduceScatterOptions : AllReduceOptions {};
struct BroadcastOptions : CommonOptions {
  int root = 0;
};
struct AllGatherOptions : CommonOptions {};
struct GatherOptions : CommonOptions {
  int root = 0;
};
struct ScatterOptions : CommonOptions {
  int root = 0;
};
struct AllToAllOptions : CommonOptions {
  // Elements to/from each rank; empty = equal split. Must outlive the Work.
  std::span<const int64_t> input_splits;
  std::span<const int64_t> output_splits;
};
struct BarrierOptions : CommonOptions {};
struct P2POptions : CommonOptions {
  int tag = 0;
};

}  // namespace collie
