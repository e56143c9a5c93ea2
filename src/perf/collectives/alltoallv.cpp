// alltoallv: every rank sends each rank its own amount, from the run's traffic (perf/traffic.h).
// As nccl-tests' alltoallv_perf: the count column is the per-peer element count of the sweep
// size (0 for a matrix), the size column the busiest rank's send or receive bytes, algbw those
// bytes over the time and busbw = algbw (n-1)/n. Rank k's send buffer is its blocks for ranks
// 0..n-1 back to back, its receive buffer the blocks from ranks 0..n-1 back to back.
#include <algorithm>

#include "perf/collective.h"

namespace collie::perf {
namespace {

Layout layout(size_t elems, DType dt, int n, int rank, const TrafficModel& t) {
  const size_t ts = dtype_size(dt);
  Layout l;
  int64_t total = 0;
  if (!t.spec().fixed_bytes()) {
    // nccl-tests: the per-peer count of the size, cut to a multiple of 16 bytes.
    l.count = (elems / static_cast<size_t>(n)) & ~(kTrafficAlign / ts - 1);
    total = static_cast<int64_t>(l.count * n * ts);
  }
  l.traffic = t.for_rank(rank, total, dt);
  l.send_count = static_cast<size_t>(l.traffic->max_send);
  l.recv_count = static_cast<size_t>(l.traffic->max_recv);
  l.algbw_count = std::max(l.send_count, l.recv_count);
  return l;
}

void init(const DataSpec& s, const Layout& l, int rank, int, void* send) {
  fill_input(s, rank, 0, send, static_cast<size_t>(l.traffic->send_total()));
}

// From source k, this rank receives the elements of k's stream that k sends it: they start
// where k's blocks for the ranks below this one end.
size_t expected(const DataSpec& s, const Layout& l, int, int, void* want) {
  const RankTraffic& t = *l.traffic;
  const size_t ts = dtype_size(s.dtype);
  size_t at = 0;
  for (int k = 0; k < t.n; ++k) {
    const auto n = static_cast<size_t>(t.recv_splits[k]);
    fill_input(s, k, static_cast<size_t>(t.recv_offsets[k]), static_cast<char*>(want) + at * ts, n);
    at += n;
  }
  return at;
}

// The buffers are sized for the busiest rank: this rank's call uses its own totals. In place
// (one buffer, as nccl-tests), the outgoing blocks are first copied to the staging buffer: the
// backends may not send from memory they are receiving into.
Works run(ProcessGroup& pg, const CallArgs& a) {
  const RankTraffic& t = *a.traffic;
  const DType dt = a.send.dtype;
  void* src = a.send.data;
  const auto sends = static_cast<size_t>(t.send_total());
  if (a.in_place) {
    a.device->copy(a.staging, a.send.data, sends * dtype_size(dt));
    src = a.staging;
  }
  AllToAllOptions o;
  o.timeout = a.timeout;
  o.async_op = a.async_op;
  o.input_splits = t.send_splits;
  o.output_splits = t.recv_splits;
  return {pg.all_to_all(a.device->view(src, sends, dt),
                        a.device->view(a.recv.data, static_cast<size_t>(t.recv_total()), dt), o)};
}

}  // namespace

CollectiveDescriptor alltoallv_collective() {
  return CollectiveDescriptor{.name = "alltoallv",
                              .op_type = OpType::AllToAll,
                              .in_place_unchecked = true,
                              .in_place_staging = true,
                              .traffic_layout = layout,
                              .algbw_ranks_factor = ranks_factor_one,
                              .busbw_factor = busbw_n_minus_1_over_n,
                              .init = init,
                              .expected = expected,
                              .run = run};
}

}  // namespace collie::perf
