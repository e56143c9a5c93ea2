#pragma once
// One function per op for ProcessGroupNCCL (as backends/mpi/mpi_collectives.h and
// backends/gloo/gloo_collectives.h do for their backends): each enqueues its NCCL call(s) on
// `stream` and says which NCCL function it called and what it returned. The caller maps the
// reduce op, records the timing events around the call, destroys a custom (PreMulSum) op
// afterwards and turns a failed result into a BackendError.
// Preconditions: the OpCall passed ProcessGroup::validate; the current CUDA device is the
// communicator's.
// Thread safety: none of their own; called by the group's submitting thread.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "comm/op_table.h"

namespace collie {

struct NcclOpArgs {
  const OpCall& call;
  ncclComm_t comm;
  cudaStream_t stream;
  ncclDataType_t dtype;   // the buffers' element type
  ncclRedOp_t op;         // ncclSum for ops without a reduction
  int rank;               // this rank in the group
  int size;               // ranks in the group
  void* barrier_scratch;  // one float on the device
};

struct NcclIssued {
  const char* function;  // "ncclAllReduce", "grouped ncclSend/ncclRecv", ...
  ncclResult_t result;
};

using NcclOpFn = NcclIssued (*)(const NcclOpArgs&);
// The backend's op table (comm/op_table.h): what it runs, and so what it declares it supports.
const OpTable<NcclOpFn>& nccl_ops();
NcclIssued nccl_issue(const NcclOpArgs& a);

}  // namespace collie
