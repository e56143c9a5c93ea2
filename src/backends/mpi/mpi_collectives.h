#pragma once
// One function per op for ProcessGroupMPI (as backends/gloo/gloo_collectives.h does for Gloo):
// each issues the non-blocking MPI call when `req` is set, else the blocking one, and says which
// MPI function it called and what it returned. The caller holds the MPI runtime's lock and turns
// a failed return code into a BackendError.
// Preconditions: the OpCall passed ProcessGroup::validate; counts that exceed MPI's int limit
// throw InvalidArgument before anything is issued.
// Thread safety: none of their own; call under MpiRuntime::lock().
#include <mpi.h>

#include "comm/op_table.h"

namespace collie {

class MpiWork;

struct MpiOpArgs {
  const OpCall& call;
  MpiWork& work;         // scratch (PreMulSum), count arrays (alltoallv), the Avg finish step
  MPI_Request* request;  // null = blocking call
  MPI_Comm comm;
  DType dtype;  // the buffers' element type
  MPI_Datatype mpi_type;
  MPI_Op op;     // MPI_OP_NULL for ops without a reduction
  int size;      // ranks in comm
  bool is_root;  // this rank is call.root
};

struct MpiIssued {
  const char* function;  // "allreduce", "alltoallv", ...
  int rc;                // MPI's return code
};

using MpiOpFn = MpiIssued (*)(const MpiOpArgs&);
// The backend's op table (comm/op_table.h): what it runs, and so what it declares it supports.
const OpTable<MpiOpFn>& mpi_ops();
MpiIssued mpi_issue(const MpiOpArgs& a);

}  // namespace collie
