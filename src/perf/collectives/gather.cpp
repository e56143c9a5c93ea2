// gather: rank k's block lands at k*count on the root. busbw = algbw (n-1)/n.
#include <algorithm>
#include <cstring>

#include "perf/collective.h"

namespace collie::perf {
namespace {

Layout layout(size_t elems, int n) {
  const size_t base = trim_per_rank(elems, n);
  return Layout{base, base, base * n, base, 0};
}

void init(const DataSpec& s, const Layout& l, int rank, int, void* send) {
  fill_input(s, rank, 0, send, l.send_count);
}

size_t expected(const DataSpec& s, const Layout& l, int rank, int root, void* want) {
  if (rank != root) return 0;
  const size_t n = l.recv_count / std::max<size_t>(l.count, 1);
  const size_t bytes = l.count * dtype_size(s.dtype);
  for (size_t k = 0; k < n; ++k)
    fill_input(s, static_cast<int>(k), 0, static_cast<char*>(want) + k * bytes, l.count);
  return l.recv_count;
}

Works run(ProcessGroup& pg, const CallArgs& a) {
  GatherOptions o;
  o.root = a.root;
  o.timeout = a.timeout;
  o.async_op = a.async_op;
  return {pg.gather(a.send, pg.rank() == a.root ? a.recv : TensorView{}, o)};
}

}  // namespace

CollectiveDescriptor gather_collective() {
  return CollectiveDescriptor{.name = "gather",
                              .op_type = OpType::Gather,
                              .rooted = true,
                              .layout = layout,
                              .algbw_ranks_factor = ranks_factor_n,
                              .busbw_factor = busbw_n_minus_1_over_n,
                              .init = init,
                              .expected = expected,
                              .run = run};
}

}  // namespace collie::perf
