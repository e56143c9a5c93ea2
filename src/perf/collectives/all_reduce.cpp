// all_reduce: every rank ends with the reduction of all inputs. busbw = algbw * 2(n-1)/n.
#include <cstring>

#include "perf/collective.h"

namespace collie::perf {
namespace {

Layout layout(size_t elems, int) { return Layout{elems, elems, elems, 0, 0}; }

double busbw(int n) { return 2.0 * (n - 1) / n; }

void init(const DataSpec& s, const Layout& l, int rank, int, void* send) {
  fill_input(s, rank, 0, send, l.send_count);
}

size_t expected(const DataSpec& s, const Layout& l, int, int, void* want) {
  fill_reduced(s, 0, want, l.count);
  return l.count;
}

Works run(ProcessGroup& pg, const CallArgs& a) {
  AllReduceOptions o;
  o.op = a.op;
  o.timeout = a.timeout;
  o.async_op = a.async_op;
  return {pg.all_reduce(a.recv, o)};
}

}  // namespace

CollectiveDescriptor all_reduce_collective() {
  return CollectiveDescriptor{.name = "all_reduce",
                              .op_type = OpType::AllReduce,
                              .reduces = true,
                              .in_place_api = true,
                              .layout = layout,
                              .algbw_ranks_factor = ranks_factor_one,
                              .busbw_factor = busbw,
                              .init = init,
                              .expected = expected,
                              .run = run};
}

}  // namespace collie::perf
