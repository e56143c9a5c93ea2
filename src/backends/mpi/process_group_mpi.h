#pragma once
// ProcessGroupMPI: the ProcessGroup API over Open MPI (host buffers only).
//
// Every op is started with a non-blocking MPI call (MPI_Iallreduce, MPI_Ialltoallv, ...) and
// returned as an MpiWork. Ops submitted with async_op = false are driven to completion inside
// run() by test-polling until the op's deadline; an op that misses it completes with a
// TimeoutError naming op, seq and rank (the MPI request stays pending; the group is then unusable).
// Float16/BFloat16 reductions use user-defined MPI ops over core/reduce_kernel.h; Avg is a sum
// followed by a division, PreMulSum scales a copy of the input before summing.
//
// The world group duplicates MPI_COMM_WORLD; a subgroup (GroupInfo.global_ranks) is created with
// MPI_Comm_create_group over its members only, matching new_group where non-members never build
// a group. REQUIRES: group rank i is MPI world rank global_ranks[i].
// Thread safety: as ProcessGroup; MPI calls are serialized when MPI lacks MPI_THREAD_MULTIPLE.
#include <mpi.h>

#include <memory>
#include <mutex>
#include <vector>

#include "comm/process_group.h"

namespace collie::mpi {

class MpiWork;

class ProcessGroupMPI : public ProcessGroup {
 public:
  // Throws BackendError when MPI cannot start or the group does not match MPI's view of ranks.
  explicit ProcessGroupMPI(GroupInfo info);
  ~ProcessGroupMPI() override;

  const Capabilities& capabilities() const override;
  void shutdown() override;

  // The backend's declared capabilities (CPU: every op, dtype and reduce op).
  static const Capabilities& declared_capabilities();

 protected:
  std::shared_ptr<Work> run(const OpCall& call) override;

 private:
  void start(const OpCall& call, MpiWork& w);
  void drive(const OpCall& call, const std::shared_ptr<MpiWork>& w);
  std::string label(const OpCall& call) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  std::mutex abandoned_mu_;
  std::vector<std::shared_ptr<MpiWork>> abandoned_;  // timed out while MPI still owns buffers
  bool shut_down_ = false;
};

}  // namespace collie::mpi
