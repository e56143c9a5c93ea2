// broadcast: the root's buffer reaches every rank. busbw = algbw.
#include <cstring>

#include "perf/collective.h"

namespace collie::perf {
namespace {

Layout layout(size_t elems, int) { return Layout{elems, elems, elems, 0, 0}; }

void init(const DataSpec& s, const Layout& l, int rank, int, void* send) {
  fill_input(s, rank, 0, send, l.send_count);
}

size_t expected(const DataSpec& s, const Layout& l, int, int root, void* want) {
  fill_input(s, root, 0, want, l.count);
  return l.count;
}

Works run(ProcessGroup& pg, const CallArgs& a) {
  BroadcastOptions o;
  o.root = a.root;
  o.timeout = a.timeout;
  o.async_op = a.async_op;
  return {pg.broadcast(a.recv, o)};
}

}  // namespace

CollectiveDescriptor broadcast_collective() {
  return CollectiveDescriptor{.name = "broadcast",
                              .op_type = OpType::Broadcast,
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
