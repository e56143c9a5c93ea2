// scatter: block k of the root's buffer lands on rank k. busbw = algbw (n-1)/n.
#include <cstring>

#include "perf/collective.h"

namespace collie::perf {
namespace {

// In place, each rank's receive block is its own slot of the (root's) send buffer.
Layout layout(size_t elems, int n) {
  const size_t base = trim_per_rank(elems, n);
  return Layout{base, base * n, base, 0, base};
}

void init(const DataSpec& s, const Layout& l, int rank, int, void* send) {
  fill_input(s, rank, 0, send, l.send_count);
}

size_t expected(const DataSpec& s, const Layout& l, int rank, int root, void* want) {
  fill_input(s, root, rank * l.count, want, l.count);
  return l.count;
}

Works run(ProcessGroup& pg, const CallArgs& a) {
  ScatterOptions o;
  o.root = a.root;
  o.timeout = a.timeout;
  o.async_op = a.async_op;
  return {pg.scatter(pg.rank() == a.root ? a.send : TensorView{}, a.recv, o)};
}

}  // namespace

CollectiveDescriptor scatter_collective() {
  return CollectiveDescriptor{.name = "scatter",
                              .op_type = OpType::Scatter,
                              .rooted = true,
                              .layout = layout,
                              .algbw_ranks_factor = ranks_factor_n,
                              .busbw_factor = busbw_n_minus_1_over_n,
                              .init = init,
                              .expected = expected,
                              .run = run};
}

}  // namespace collie::perf
