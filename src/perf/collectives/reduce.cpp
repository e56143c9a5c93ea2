// reduce: the root ends with the reduction of all inputs. busbw = algbw.
#include <cstring>

#include "perf/collective.h"

namespace collie::perf {
namespace {

Layout layout(size_t elems, int) { return Layout{elems, elems, elems, 0, 0}; }

void init(const DataSpec& s, const Layout& l, int rank, int, void* send) {
  fill_input(s, rank, 0, send, l.send_count);
}

// Only the root's output is defined.
size_t expected(const DataSpec& s, const Layout& l, int rank, int root, void* want) {
  if (rank != root) return 0;
  fill_reduced(s, 0, want, l.count);
  return l.count;
}

Works run(ProcessGroup& pg, const CallArgs& a) {
  ReduceOptions o;
  o.op = a.op;
  o.root = a.root;
  o.timeout = a.timeout;
  o.async_op = a.async_op;
  return {pg.reduce(a.recv, o)};
}

}  // namespace

CollectiveDescriptor reduce_collective() {
  return CollectiveDescriptor{.name = "reduce",
                              .op_type = OpType::Reduce,
                              .reduces = true,
                              .rooted = true,
                              .in_place_api = true,
                              .layout = layout,
                              .algbw_ranks_factor = ranks_factor_one,
                              .busbw_factor = busbw_one,
                              .init = init,
                              .expected = expected,
                              .run = run};
}

}  // namespace collie::perf
