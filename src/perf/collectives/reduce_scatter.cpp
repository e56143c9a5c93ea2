// reduce_scatter: rank r ends with block r of the reduction. busbw = algbw (n-1)/n.
#include <cstring>

#include "perf/collective.h"

namespace collie::perf {
namespace {

// In place, each rank's output is its own block of the send buffer.
Layout layout(size_t elems, int n) {
  const size_t base = trim_per_rank(elems, n);
  return Layout{base, base * n, base, 0, base};
}

void init(const DataSpec& s, const Layout& l, int rank, int, void* send) {
  fill_input(s, rank, 0, send, l.send_count);
}

size_t expected(const DataSpec& s, const Layout& l, int rank, int, void* want) {
  fill_reduced(s, rank * l.count, want, l.count);
  return l.count;
}

Works run(ProcessGroup& pg, const CallArgs& a) {
  ReduceScatterOptions o;
  o.op = a.op;
  o.timeout = a.timeout;
  o.async_op = a.async_op;
  return {pg.reduce_scatter(a.send, a.recv, o)};
}

}  // namespace

CollectiveDescriptor reduce_scatter_collective() {
  return CollectiveDescriptor{.name = "reduce_scatter",
                              .op_type = OpType::ReduceScatter,
                              .reduces = true,
                              .layout = layout,
                              .algbw_ranks_factor = ranks_factor_n,
                              .busbw_factor = busbw_n_minus_1_over_n,
                              .init = init,
                              .expected = expected,
                              .run = run};
}

}  // namespace collie::perf
