#include "backends/mpi/mpi_collectives.h"

#include <fmt/format.h>

#include <climits>
#include <cstring>

#include "backends/mpi/mpi_work.h"
#include "comm/op_table.h"
#include "core/error.h"
#include "core/reduce_kernel.h"

namespace collie {
namespace {

int checked_count(size_t n, const MpiWork& w) {
  if (n > static_cast<size_t>(INT_MAX)) {
    throw InvalidArgument(fmt::format(
        "{}: {} elements exceed MPI's int count limit ({}); split the buffer into smaller ops",
        w.label(), n, INT_MAX));
  }
  return static_cast<int>(n);
}

// PreMulSum sums factor * input: scales `in` itself when it is also the output, else a copy in
// the Work's scratch. Returns what MPI should read.
const void* premul_source(const MpiOpArgs& a, const TensorView& in, bool in_place) {
  const OpCall& c = a.call;
  if (!has_reduce_op(c.type) || c.reduce_op != ReduceOp::PreMulSum) return in.data;
  if (in_place) {
    scale(in.data, in.numel, a.dtype, c.premul_factor);
    return in.data;
  }
  a.work.scratch.resize(in.nbytes());
  if (in.numel > 0) std::memcpy(a.work.scratch.data(), in.data, in.nbytes());
  scale(a.work.scratch.data(), in.numel, a.dtype, c.premul_factor);
  return a.work.scratch.data();
}

// Avg = sum, then the Work's finish step divides `out` by the group size.
void divide_after(const MpiOpArgs& a, const TensorView& out) {
  if (a.call.reduce_op != ReduceOp::Avg) return;
  const int n = a.size;
  const DType d = a.dtype;
  a.work.finish = [out, d, n] { divide(out.data, out.numel, d, n); };
}

MpiIssued send(const MpiOpArgs& a) {
  const OpCall& c = a.call;
  const int cnt = checked_count(c.input.numel, a.work);
  const MPI_Datatype t = a.mpi_type;
  return {"send", a.request ? MPI_Isend(c.input.data, cnt, t, c.peer, c.tag, a.comm, a.request)
                            : MPI_Send(c.input.data, cnt, t, c.peer, c.tag, a.comm)};
}

MpiIssued recv(const MpiOpArgs& a) {
  const OpCall& c = a.call;
  const int cnt = checked_count(c.output.numel, a.work);
  const MPI_Datatype t = a.mpi_type;
  return {"recv", a.request
                      ? MPI_Irecv(c.output.data, cnt, t, c.peer, c.tag, a.comm, a.request)
                      : MPI_Recv(c.output.data, cnt, t, c.peer, c.tag, a.comm, MPI_STATUS_IGNORE)};
}

MpiIssued broadcast(const MpiOpArgs& a) {
  const OpCall& c = a.call;
  const int cnt = checked_count(c.input.numel, a.work);
  const MPI_Datatype t = a.mpi_type;
  return {"bcast", a.request ? MPI_Ibcast(c.input.data, cnt, t, c.root, a.comm, a.request)
                             : MPI_Bcast(c.input.data, cnt, t, c.root, a.comm)};
}

MpiIssued all_reduce(const MpiOpArgs& a) {
  const OpCall& c = a.call;
  const int cnt = checked_count(c.input.numel, a.work);
  premul_source(a, c.input, true);
  divide_after(a, c.input);
  void* buf = c.input.data;
  const MPI_Datatype t = a.mpi_type;
  return {"allreduce", a.request
                           ? MPI_Iallreduce(MPI_IN_PLACE, buf, cnt, t, a.op, a.comm, a.request)
                           : MPI_Allreduce(MPI_IN_PLACE, buf, cnt, t, a.op, a.comm)};
}

MpiIssued reduce(const MpiOpArgs& a) {
  const OpCall& c = a.call;
  const int cnt = checked_count(c.input.numel, a.work);
  if (a.is_root) divide_after(a, c.input);
  const void* src = a.is_root ? MPI_IN_PLACE : premul_source(a, c.input, false);
  if (a.is_root) premul_source(a, c.input, true);
  void* dst = a.is_root ? c.input.data : nullptr;
  const MPI_Datatype t = a.mpi_type;
  return {"reduce", a.request ? MPI_Ireduce(src, dst, cnt, t, a.op, c.root, a.comm, a.request)
                              : MPI_Reduce(src, dst, cnt, t, a.op, c.root, a.comm)};
}

MpiIssued all_gather(const MpiOpArgs& a) {
  const OpCall& c = a.call;
  const int cnt = checked_count(c.input.numel, a.work);
  checked_count(c.output.numel, a.work);
  const MPI_Datatype t = a.mpi_type;
  void* out = c.output.data;
  return {"allgather", a.request
                           ? MPI_Iallgather(c.input.data, cnt, t, out, cnt, t, a.comm, a.request)
                           : MPI_Allgather(c.input.data, cnt, t, out, cnt, t, a.comm)};
}

MpiIssued gather(const MpiOpArgs& a) {
  const OpCall& c = a.call;
  const int cnt = checked_count(c.input.numel, a.work);
  if (a.is_root) checked_count(c.output.numel, a.work);
  void* out = a.is_root ? c.output.data : nullptr;
  const MPI_Datatype t = a.mpi_type;
  return {"gather", a.request
                        ? MPI_Igather(c.input.data, cnt, t, out, cnt, t, c.root, a.comm, a.request)
                        : MPI_Gather(c.input.data, cnt, t, out, cnt, t, c.root, a.comm)};
}

MpiIssued scatter(const MpiOpArgs& a) {
  const OpCall& c = a.call;
  const int cnt = checked_count(c.output.numel, a.work);
  if (a.is_root) checked_count(c.input.numel, a.work);
  const void* in = a.is_root ? c.input.data : nullptr;
  const MPI_Datatype t = a.mpi_type;
  return {"scatter",
          a.request ? MPI_Iscatter(in, cnt, t, c.output.data, cnt, t, c.root, a.comm, a.request)
                    : MPI_Scatter(in, cnt, t, c.output.data, cnt, t, c.root, a.comm)};
}

MpiIssued reduce_scatter(const MpiOpArgs& a) {
  const OpCall& c = a.call;
  checked_count(c.input.numel, a.work);
  const int cnt = checked_count(c.output.numel, a.work);
  divide_after(a, c.output);
  const void* src = premul_source(a, c.input, false);
  const MPI_Datatype t = a.mpi_type;
  void* out = c.output.data;
  return {"reduce_scatter_block",
          a.request ? MPI_Ireduce_scatter_block(src, out, cnt, t, a.op, a.comm, a.request)
                    : MPI_Reduce_scatter_block(src, out, cnt, t, a.op, a.comm)};
}

MpiIssued all_to_all(const MpiOpArgs& a) {
  const OpCall& c = a.call;
  checked_count(c.input.numel, a.work);
  checked_count(c.output.numel, a.work);
  const MPI_Datatype t = a.mpi_type;
  const int n = a.size;
  if (c.input_splits.empty()) {
    const int cnt = static_cast<int>(c.input.numel / static_cast<size_t>(n));
    // In place (one buffer for both): MPI forbids aliased send/receive buffers.
    const void* src = c.input.data == c.output.data ? MPI_IN_PLACE : c.input.data;
    void* out = c.output.data;
    return {"alltoall", a.request ? MPI_Ialltoall(src, cnt, t, out, cnt, t, a.comm, a.request)
                                  : MPI_Alltoall(src, cnt, t, out, cnt, t, a.comm)};
  }
  // Layout: send counts, send displacements, recv counts, recv displacements.
  a.work.counts.assign(4 * static_cast<size_t>(n), 0);
  int* sc = a.work.counts.data();
  int* sd = sc + n;
  int* rc = sd + n;
  int* rd = rc + n;
  for (int i = 0; i < n; ++i) {
    sc[i] = static_cast<int>(c.input_splits[i]);
    rc[i] = static_cast<int>(c.output_splits[i]);
    if (i > 0) {
      sd[i] = sd[i - 1] + sc[i - 1];
      rd[i] = rd[i - 1] + rc[i - 1];
    }
  }
  void* out = c.output.data;
  return {"alltoallv",
          a.request ? MPI_Ialltoallv(c.input.data, sc, sd, t, out, rc, rd, t, a.comm, a.request)
                    : MPI_Alltoallv(c.input.data, sc, sd, t, out, rc, rd, t, a.comm)};
}

MpiIssued barrier(const MpiOpArgs& a) {
  return {"barrier", a.request ? MPI_Ibarrier(a.comm, a.request) : MPI_Barrier(a.comm)};
}

}  // namespace

const OpTable<MpiOpFn>& mpi_ops() {
  using Fn = MpiOpFn;
  static constexpr OpTable<Fn> kOps = op_table<Fn>({{OpType::Send, send},
                                                    {OpType::Recv, recv},
                                                    {OpType::Broadcast, broadcast},
                                                    {OpType::AllReduce, all_reduce},
                                                    {OpType::Reduce, reduce},
                                                    {OpType::AllGather, all_gather},
                                                    {OpType::Gather, gather},
                                                    {OpType::Scatter, scatter},
                                                    {OpType::ReduceScatter, reduce_scatter},
                                                    {OpType::AllToAll, all_to_all},
                                                    {OpType::Barrier, barrier}});
  return kOps;
}

MpiIssued mpi_issue(const MpiOpArgs& a) { return run_op(mpi_ops(), a.call.type, a); }

}  // namespace collie
