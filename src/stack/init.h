#pragma once
// Creating and destroying process groups (torch.distributed's init_process_group / new_group).
// Both return the group fully wrapped (tracing always; desync checks at COLLIE_DEBUG=DETAIL).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/process_group.h"
#include "core/export.h"

namespace collie {

class Env;

struct InitOptions {
  std::string backend = "gloo";  // a registered backend: gloo, mpi, nccl
  // "" = COLLIE_INIT_METHOD, else a backend's own rendezvous (mpi under mpirun), else env://.
  std::string init_method;
  int rank = -1;                      // -1 = from the launcher environment
  int world_size = -1;                // -1 = from the launcher environment
  Millis timeout = kUseGroupTimeout;  // kUseGroupTimeout = COLLIE_TIMEOUT or 5 minutes
  std::shared_ptr<Store> store;       // when set, used instead of init_method
  // With a store: the job-wide (world) rank of each member, indexed by group rank; empty means
  // 0..world_size-1. Lets a group over some of a job's processes be made without a parent group
  // (probes' pair groups); backends that address processes by world rank (MPI) need it.
  std::vector<int> global_ranks;
  std::string group_desc = "default_pg";
  const Env* env = nullptr;  // nullptr = the process environment
};

// Blocks until every rank has joined (bounded by the timeout). Throws InvalidArgument for bad or
// contradictory settings, TimeoutError naming the missing ranks, NetworkError/StoreError when
// the store cannot be reached, BackendError when the backend fails to start.
COLLIE_API std::shared_ptr<ProcessGroup> init_process_group(const InitOptions& opts = {});

struct BackendRegistration;
struct SelfRendezvous;
// With no init method: `reg`'s own rendezvous (MPI under mpirun), else, under mpirun with no
// MASTER_ADDR/MASTER_PORT, the MPI bootstrap for any backend (when this build has MPI); nullopt
// when neither applies (use rendezvous()). Records the store host (discovery/network_choices.h).
COLLIE_API std::optional<SelfRendezvous> launcher_self_rendezvous(const BackendRegistration& reg,
                                                                  const std::string& init_method,
                                                                  const Env& env, Millis timeout);

struct NewGroupOptions {
  Millis timeout = kUseGroupTimeout;  // kUseGroupTimeout = the parent's
  std::string desc = "undefined";
  std::string backend;  // "" = the parent's
};

// Collective over `parent`: every rank of `parent` must call it, with the same `ranks` (parent
// ranks; group rank i is ranks[i]) and in the same order relative to other new_group calls.
// Returns nullptr on ranks that are not members.
COLLIE_API std::shared_ptr<ProcessGroup> new_group(ProcessGroup& parent,
                                                   const std::vector<int>& ranks,
                                                   const NewGroupOptions& opts = {});

// Shuts the group down (pending ops fail; later submits throw). Idempotent.
COLLIE_API void destroy_process_group(ProcessGroup& pg);

}  // namespace collie
