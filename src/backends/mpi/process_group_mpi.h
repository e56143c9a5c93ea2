#pragma once
// ProcessGroupMPI: the ProcessGroup API over Open MPI (host buffers only).
//
// Async ops (async_op = true) start a non-blocking MPI call (MPI_Iallreduce, MPI_Ialltoallv, ...)
// and return an MpiWork that is test-polled; wait(timeout) raises TimeoutError naming op, seq and
// rank. Synchronous ops call the blocking MPI function (Open MPI's tuned algorithms, no overhead
// over raw MPI) under a watchdog: past the op's deadline the job is ended with MPI_Abort after
// printing the same TimeoutError text, since a blocking MPI call cannot be interrupted.
// REQUIRES: every rank passes the same async_op for a given collective (MPI never matches a
// blocking collective with a non-blocking one; a mismatch ends at the deadline, not in a hang).
// Float16/BFloat16 reductions use user-defined MPI ops over core/reduce_kernel.h; Avg is a sum
// followed by a division, PreMulSum scales a copy of the input before summing.
//
// The world group duplicates MPI_COMM_WORLD; a subgroup (GroupInfo.global_ranks) is created with
// MPI_Comm_create_group over its members only, matching new_group where non-members never build
// a group. REQUIRES: group rank i is MPI world rank global_ranks[i]. Creating the world group has
// the group's deadline (MPI_Comm_idup); MPI_Comm_create_group has no non-blocking form, so a
// subgroup with a store first meets in a store barrier (TimeoutError naming the missing ranks).
// Thread safety: as ProcessGroup; MPI calls are serialized when MPI lacks MPI_THREAD_MULTIPLE.
#include <mpi.h>

#include <memory>
#include <mutex>
#include <vector>

#include "backends/mpi/mpi_watchdog.h"
#include "comm/process_group.h"

namespace collie {

class Env;
class MpiRuntime;
class MpiWork;

class ProcessGroupMPI : public ProcessGroup {
 public:
  // Throws BackendError when MPI cannot start or the group does not match MPI's view of ranks.
  // env is accepted for the common backend constructor shape; MPI reads its own launcher state.
  ProcessGroupMPI(GroupInfo info, const Env& env);
  ~ProcessGroupMPI() override;

  const Capabilities& capabilities() const override;
  void shutdown() override;

  // The backend's declared capabilities (CPU: every op, dtype and reduce op).
  static const Capabilities& declared_capabilities();

 protected:
  std::shared_ptr<Work> run(const OpCall& call) override;

 private:
  // Issues the MPI call: non-blocking into *req, or blocking when req is null.
  void start(const OpCall& call, MpiWork& w, MPI_Request* req);
  [[noreturn]] void expire(OpType op, uint64_t seq, Millis timeout);

  MpiRuntime& rt_;  // the process's (MpiRuntime::get()), looked up once
  MPI_Comm comm_ = MPI_COMM_NULL;
  const std::shared_ptr<const std::string> group_label_;  // "(group 0 'default_pg')"
  MpiWatchdog watchdog_;
  bool shut_down_ = false;
};

}  // namespace collie
