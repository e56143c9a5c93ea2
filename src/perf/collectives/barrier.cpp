// barrier: latency only (one row, size 0, no data). Without a buffer both placements are the
// same call; the in-place column is a second, separately timed run of it.
#include <cstring>

#include "perf/collective.h"

namespace collie::perf {
namespace {

Layout layout(size_t, int) { return Layout{}; }

double busbw(int) { return 0.0; }

void init(const DataSpec&, const Layout&, int, int, void*) {}

size_t expected(const DataSpec&, const Layout&, int, int, void*) { return 0; }

Works run(ProcessGroup& pg, const CallArgs& a) {
  BarrierOptions o;
  o.timeout = a.timeout;
  o.async_op = a.async_op;
  return {pg.barrier(o)};
}

}  // namespace

CollectiveDescriptor barrier_collective() {
  return CollectiveDescriptor{.name = "barrier",
                              .op_type = OpType::Barrier,
                              .latency_only = true,
                              .layout = layout,
                              .algbw_ranks_factor = ranks_factor_one,
                              .busbw_factor = busbw,
                              .init = init,
                              .expected = expected,
                              .run = run};
}

}  // namespace collie::perf
