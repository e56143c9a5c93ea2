#include "backends/nccl/nccl_collectives.h"

#include "comm/op_table.h"
#include "comm/process_group.h"

namespace collie {
namespace {

char* at(const TensorView& t, size_t elements) {
  return static_cast<char*>(t.data) + elements * dtype_size(t.dtype);
}

NcclIssued send(const NcclOpArgs& a) {
  const OpCall& c = a.call;
  return {"ncclSend", ncclSend(c.input.data, c.input.numel, a.dtype, c.peer, a.comm, a.stream)};
}

NcclIssued recv(const NcclOpArgs& a) {
  const OpCall& c = a.call;
  return {"ncclRecv", ncclRecv(c.output.data, c.output.numel, a.dtype, c.peer, a.comm, a.stream)};
}

NcclIssued broadcast(const NcclOpArgs& a) {
  const OpCall& c = a.call;
  return {"ncclBroadcast", ncclBroadcast(c.input.data, c.input.data, c.input.numel, a.dtype, c.root,
                                         a.comm, a.stream)};
}

NcclIssued all_reduce(const NcclOpArgs& a) {
  const OpCall& c = a.call;
  return {"ncclAllReduce", ncclAllReduce(c.input.data, c.input.data, c.input.numel, a.dtype, a.op,
                                         a.comm, a.stream)};
}

NcclIssued reduce(const NcclOpArgs& a) {
  const OpCall& c = a.call;
  return {"ncclReduce", ncclReduce(c.input.data, c.input.data, c.input.numel, a.dtype, a.op, c.root,
                                   a.comm, a.stream)};
}

NcclIssued all_gather(const NcclOpArgs& a) {
  const OpCall& c = a.call;
  return {"ncclAllGather",
          ncclAllGather(c.input.data, c.output.data, c.input.numel, a.dtype, a.comm, a.stream)};
}

NcclIssued reduce_scatter(const NcclOpArgs& a) {
  const OpCall& c = a.call;
  return {"ncclReduceScatter", ncclReduceScatter(c.input.data, c.output.data, c.output.numel,
                                                 a.dtype, a.op, a.comm, a.stream)};
}

// gather, scatter and all_to_all: point-to-point calls in one NCCL group; the first failing call
// stops the loop, the group is always ended, and its result counts when every call succeeded.
constexpr const char* kGrouped = "grouped ncclSend/ncclRecv";

NcclIssued grouped_end(ncclResult_t r) {
  const ncclResult_t end = ncclGroupEnd();
  if (r == ncclSuccess) r = end;
  return {kGrouped, r};
}

NcclIssued gather(const NcclOpArgs& a) {
  const OpCall& c = a.call;
  const size_t cnt = per_rank_count(c, a.size);
  ncclResult_t r = ncclSuccess;
  ncclGroupStart();
  for (int j = 0; j < a.size && r == ncclSuccess; ++j) {
    if (j == c.root) r = ncclSend(c.input.data, cnt, a.dtype, c.root, a.comm, a.stream);
    if (r == ncclSuccess && a.rank == c.root) {
      r = ncclRecv(at(c.output, j * cnt), cnt, a.dtype, j, a.comm, a.stream);
    }
  }
  return grouped_end(r);
}

NcclIssued scatter(const NcclOpArgs& a) {
  const OpCall& c = a.call;
  const size_t cnt = per_rank_count(c, a.size);
  ncclResult_t r = ncclSuccess;
  ncclGroupStart();
  for (int j = 0; j < a.size && r == ncclSuccess; ++j) {
    if (a.rank == c.root) r = ncclSend(at(c.input, j * cnt), cnt, a.dtype, j, a.comm, a.stream);
    if (r == ncclSuccess && j == c.root) {
      r = ncclRecv(c.output.data, cnt, a.dtype, c.root, a.comm, a.stream);
    }
  }
  return grouped_end(r);
}

NcclIssued all_to_all(const NcclOpArgs& a) {
  const OpCall& c = a.call;
  const size_t cnt = per_rank_count(c, a.size);
  ncclResult_t r = ncclSuccess;
  ncclGroupStart();
  size_t soff = 0, roff = 0;
  for (int j = 0; j < a.size && r == ncclSuccess; ++j) {
    size_t sn = cnt, rn = cnt;
    if (!c.input_splits.empty()) {
      sn = static_cast<size_t>(c.input_splits[j]);
      rn = static_cast<size_t>(c.output_splits[j]);
    }
    r = ncclSend(at(c.input, soff), sn, a.dtype, j, a.comm, a.stream);
    if (r == ncclSuccess) r = ncclRecv(at(c.output, roff), rn, a.dtype, j, a.comm, a.stream);
    soff += sn;
    roff += rn;
  }
  return grouped_end(r);
}

NcclIssued barrier(const NcclOpArgs& a) {
  return {"ncclAllReduce (barrier)", ncclAllReduce(a.barrier_scratch, a.barrier_scratch, 1,
                                                   ncclFloat32, ncclSum, a.comm, a.stream)};
}

}  // namespace

const OpTable<NcclOpFn>& nccl_ops() {
  using Fn = NcclOpFn;
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

NcclIssued nccl_issue(const NcclOpArgs& a) { return run_op(nccl_ops(), a.call.type, a); }

}  // namespace collie
