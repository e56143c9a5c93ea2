// sendrecv (ring): every rank sends to rank+1 and receives from rank-1. busbw = algbw.
#include <cstring>

#include "perf/collective.h"

namespace collie::perf {
namespace {

Layout layout(size_t elems, int) { return Layout{elems, elems, elems, 0, 0}; }

void init(const DataSpec& s, const Layout& l, int rank, int, void* send) {
  fill_input(s, rank, 0, send, l.send_count);
}

size_t expected(const DataSpec& s, const Layout& l, int rank, int, void* want) {
  fill_input(s, (rank - 1 + s.world_size) % s.world_size, 0, want, l.count);
  return l.count;
}

// Both directions are posted before either is waited on; a blocking send would deadlock the ring.
// In place (one buffer, as nccl-tests), the outgoing data is first copied to the staging buffer:
// the receive may land before the send has read the buffer, so sending from it would be a race.
Works run(ProcessGroup& pg, const CallArgs& a) {
  const int n = pg.size(), r = pg.rank();
  P2POptions o;
  o.timeout = a.timeout;
  o.async_op = true;
  TensorView src = a.send;
  if (a.in_place) {
    a.device->copy(a.staging, a.send.data, a.send.nbytes());
    src = a.device->view(a.staging, a.send.numel, a.send.dtype);
  }
  auto s = pg.send(src, (r + 1) % n, o);
  auto v = pg.recv(a.recv, (r - 1 + n) % n, o);
  return {std::move(s), std::move(v)};
}

}  // namespace

CollectiveDescriptor sendrecv_collective() {
  return CollectiveDescriptor{.name = "sendrecv",
                              .op_type = OpType::Send,
                              .paired_op = OpType::Recv,
                              .min_ranks = 2,
                              .in_place_unchecked = true,
                              .in_place_staging = true,
                              .layout = layout,
                              .algbw_ranks_factor = ranks_factor_one,
                              .busbw_factor = busbw_one,
                              .init = init,
                              .expected = expected,
                              .run = run};
}

}  // namespace collie::perf
