// alltoall: block r of rank k's buffer lands at block k on rank r. busbw = algbw (n-1)/n.
#include <algorithm>
#include <cstring>

#include "perf/collective.h"

namespace collie::perf {
namespace {

// In place (as nccl-tests), input and output are one buffer: the backends take that case apart
// (Gloo sends from a scratch copy, MPI uses MPI_IN_PLACE).
Layout layout(size_t elems, int n) {
  const size_t base = trim_per_rank(elems, n);
  return Layout{base, base * n, base * n, 0, 0};
}

void init(const DataSpec& s, const Layout& l, int rank, int, void* send) {
  fill_input(s, rank, 0, send, l.send_count);
}

size_t expected(const DataSpec& s, const Layout& l, int rank, int, void* want) {
  const size_t n = l.recv_count / std::max<size_t>(l.count, 1);
  const size_t bytes = l.count * dtype_size(s.dtype);
  for (size_t k = 0; k < n; ++k)
    fill_input(s, static_cast<int>(k), rank * l.count, static_cast<char*>(want) + k * bytes,
               l.count);
  return l.recv_count;
}

Works run(ProcessGroup& pg, const CallArgs& a) {
  AllToAllOptions o;
  o.timeout = a.timeout;
  o.async_op = a.async_op;
  return {pg.all_to_all(a.send, a.recv, o)};
}

}  // namespace

CollectiveDescriptor alltoall_collective() {
  return CollectiveDescriptor{.name = "alltoall",
                              .op_type = OpType::AllToAll,
                              .in_place_unchecked = true,
                              .layout = layout,
                              .algbw_ranks_factor = ranks_factor_n,
                              .busbw_factor = busbw_n_minus_1_over_n,
                              .init = init,
                              .expected = expected,
                              .run = run};
}

}  // namespace collie::perf
