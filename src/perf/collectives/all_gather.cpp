// all_gather: rank k's block lands at k*count on every rank. busbw = algbw (n-1)/n.
#include <algorithm>
#include <cstring>

#include "perf/collective.h"

namespace collie::perf {
namespace {

// In place, each rank's send block already sits at its own slot of the receive buffer.
Layout layout(size_t elems, int n) {
  const size_t base = trim_per_rank(elems, n);
  return Layout{base, base, base * n, base, 0};
}

void init(const DataSpec& s, const Layout& l, int rank, int, void* send) {
  fill_input(s, rank, 0, send, l.send_count);
}

size_t expected(const DataSpec& s, const Layout& l, int, int, void* want) {
  const size_t n = l.recv_count / std::max<size_t>(l.count, 1);
  const size_t bytes = l.count * dtype_size(s.dtype);
  for (size_t k = 0; k < n; ++k)
    fill_input(s, static_cast<int>(k), 0, static_cast<char*>(want) + k * bytes, l.count);
  return l.recv_count;
}

Works run(ProcessGroup& pg, const CallArgs& a) {
  AllGatherOptions o;
  o.timeout = a.timeout;
  o.async_op = a.async_op;
  return {pg.all_gather(a.send, a.recv, o)};
}

}  // namespace

CollectiveDescriptor all_gather_collective() {
  return CollectiveDescriptor{.name = "all_gather",
                              .op_type = OpType::AllGather,
                              .layout = layout,
                              .algbw_ranks_factor = ranks_factor_n,
                              .busbw_factor = busbw_n_minus_1_over_n,
                              .init = init,
                              .expected = expected,
                              .run = run};
}

}  // namespace collie::perf
