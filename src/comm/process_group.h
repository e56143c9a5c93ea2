#pragma once
// ProcessGroup: the public API (torch.distributed's vocabulary), implemented by backends and
// decorated by wrappers (desync checks, tracing).
//
// Every verb builds an OpCall and goes through submit(), which validates arguments once for all
// backends (ranks in range, buffer sizes consistent, capability table), assigns the sequence
// number and resolves the timeout, then calls run(). Backends and wrappers implement run().
//
// Ownership: buffers are the caller's and must stay valid until the returned Work completes.
// Thread safety: a group may be used from one thread at a time for submitting ops (like torch);
// rank(), size(), info() and capabilities() are safe from any thread. Every rank of the group must
// submit the same collectives in the same order.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "comm/capabilities.h"
#include "comm/options.h"
#include "comm/work.h"
#include "core/export.h"
#include "device/device_runtime.h"

namespace collie {

class Store;

struct GroupInfo {
  std::string backend;              // "gloo", "mpi", "nccl"
  std::string name = "0";           // pg_id: "0" for the world group, then "1", "2", ...
  std::string desc = "default_pg";  // human description ("default_pg", "tp", ...)
  int rank = 0;
  int size = 1;
  std::vector<int> global_ranks;  // group rank -> world rank
  Millis timeout = kDefaultTimeout;
  std::shared_ptr<Store> store;  // group-scoped (prefixed) control-plane store
  std::string store_host;        // host the ranks dialled for the store ("" = unknown); backends
                                 // bind toward it (discovery/bind_address.h)
};

class COLLIE_API ProcessGroup {
 public:
  explicit ProcessGroup(GroupInfo info);
  virtual ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return info_.rank; }
  int size() const { return info_.size; }
  const GroupInfo& info() const { return info_; }
  const std::string& backend_name() const { return info_.backend; }
  virtual const Capabilities& capabilities() const = 0;

  std::shared_ptr<Work> send(TensorView t, int dst, const P2POptions& o = {});
  std::shared_ptr<Work> recv(TensorView t, int src, const P2POptions& o = {});
  std::shared_ptr<Work> broadcast(TensorView t, const BroadcastOptions& o = {});
  std::shared_ptr<Work> all_reduce(TensorView t, const AllReduceOptions& o = {});
  std::shared_ptr<Work> reduce(TensorView t, const ReduceOptions& o = {});
  std::shared_ptr<Work> all_gather(TensorView in, TensorView out, const AllGatherOptions& o = {});
  // REQUIRES on non-root ranks: nothing about `out` (it may be empty).
  std::shared_ptr<Work> gather(TensorView in, TensorView out, const GatherOptions& o = {});
  // REQUIRES on non-root ranks: nothing about `in` (it may be empty).
  std::shared_ptr<Work> scatter(TensorView in, TensorView out, const ScatterOptions& o = {});
  std::shared_ptr<Work> reduce_scatter(TensorView in, TensorView out,
                                       const ReduceScatterOptions& o = {});
  std::shared_ptr<Work> all_to_all(TensorView in, TensorView out, const AllToAllOptions& o = {});
  std::shared_ptr<Work> barrier(const BarrierOptions& o = {});

  // The single entry of every verb. Throws InvalidArgument for bad calls (nothing is sent).
  std::shared_ptr<Work> submit(OpCall call);

  // Stops the group: further submits throw; backends release their resources.
  virtual void shutdown() {}
  // The device this group's buffers live on, for tools that allocate, fill, time and synchronize
  // (perf, probes): the shared host runtime by default (gloo, mpi), the group's CUDA device and
  // stream for nccl. Owned by the group; valid until it is destroyed. Wrappers forward it.
  virtual device::DeviceRuntime& device_runtime() { return device::host_runtime(); }
  // Next layer down for wrappers; nullptr for a backend.
  virtual ProcessGroup* inner() const { return nullptr; }

  // Last sequence numbers handed out by submit() (0 = none yet).
  uint64_t last_collective_seq() const { return coll_seq_.load(std::memory_order_relaxed); }
  uint64_t last_p2p_seq() const { return p2p_seq_.load(std::memory_order_relaxed); }

 protected:
  friend class ProcessGroupWrapper;
  // REQUIRES: call was validated by submit() (seq and timeout are set).
  // A backend's duty on call.timeout (the op's deadline, resolved by submit from the options or
  // the group's timeout): no wait inside the op may outlast it; past it the Work completes with
  // a TimeoutError that names the rank, op and seq ("[Rank 2] all_reduce #7 ..."), either from
  // the library's own timeout (Gloo's setTimeout) or from the backend's watchdog (MPI, NCCL).
  // A blocking library call that cannot be interrupted must still end the job then (MPI_Abort)
  // rather than hang. Wrappers forward the call unchanged.
  virtual std::shared_ptr<Work> run(const OpCall& call) = 0;

 private:
  void validate(const OpCall& call) const;
  GroupInfo info_;
  // Written by the submitting thread only (see Thread safety), read by any.
  std::atomic<uint64_t> coll_seq_{0};
  std::atomic<uint64_t> p2p_seq_{0};
};

// Element count each rank contributes for `call` (e.g. output.numel / size for all_gather).
COLLIE_API size_t per_rank_count(const OpCall& call, int group_size);

}  // namespace collie
