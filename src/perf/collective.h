#pragma once
// One descriptor per benchmarked collective (src/perf/collectives/<name>.cpp), listed in one
// plain array (collective.cpp) the driver looks up by name. A descriptor supplies only what differs
// between collectives — byte counts, buffer layout, data init/expected values, the bus-bandwidth
// factor and the call through the ProcessGroup API; the driver (driver.h) owns everything else.
// Thread safety: the table is built on first use (a function-local static); lookups are read-only.
#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/process_group.h"
#include "device/device_runtime.h"
#include "perf/data.h"
#include "perf/traffic.h"

namespace collie::perf {

// The Works one run() submitted: one, or two (sendrecv's send and receive). Held inline, so a
// timed iteration allocates nothing for them and moves the handles without counting references.
class Works {
 public:
  Works(std::shared_ptr<Work> a) : w_{std::move(a), nullptr}, n_(1) {}  // NOLINT: implicit
  Works(std::shared_ptr<Work> a, std::shared_ptr<Work> b) : w_{std::move(a), std::move(b)}, n_(2) {}
  const std::shared_ptr<Work>* begin() const { return w_.data(); }
  const std::shared_ptr<Work>* end() const { return w_.data() + n_; }

 private:
  std::array<std::shared_ptr<Work>, 2> w_;
  size_t n_;
};

// Element counts for one sweep size (nccl-tests' GetCollByteCount).
struct Layout {
  size_t count = 0;       // per-call element count: the table's count column
  size_t send_count = 0;  // elements in the send buffer
  size_t recv_count = 0;  // elements in the receive buffer
  // In-place runs place the send data inside the receive buffer at this element offset
  // (per rank, times `rank`), as nccl-tests does.
  size_t send_inplace_offset = 0;
  size_t recv_inplace_offset = 0;
  // Uneven per-peer traffic (alltoallv): this rank's splits for this size; null otherwise.
  std::shared_ptr<const RankTraffic> traffic = nullptr;
  // Elements algbw counts when not 0 (alltoallv: the busiest rank's send or receive total);
  // 0: count x algbw_ranks_factor(n).
  size_t algbw_count = 0;
};

// Everything one call needs. Views are the caller's; they stay valid until the Work completes.
struct CallArgs {
  TensorView send;
  TensorView recv;
  bool in_place = false;
  ReduceOp op = ReduceOp::Sum;
  int root = 0;
  Millis timeout = kUseGroupTimeout;
  bool async_op = false;
  // In-place runs of a descriptor with in_place_staging: send.nbytes() of the driver's memory,
  // disjoint from send/recv, where run() may stage the send data (nullptr otherwise).
  void* staging = nullptr;
  // The group's device runtime (never null; host memory unless the driver sets the group's):
  // views over staging and device copies go through it.
  device::DeviceRuntime* device = &device::host_runtime();
  // The layout's traffic (alltoallv), null for every other collective. Outlives the Works.
  const RankTraffic* traffic = nullptr;
};

struct CollectiveDescriptor {
  std::string name;  // "all_reduce" (also the table's "<name>_perf")
  OpType op_type;    // for capability checks
  // A second op run() also issues, which the backend must support too (sendrecv: Recv); equal
  // to op_type when there is none.
  std::optional<OpType> paired_op = std::nullopt;
  int min_ranks = 1;          // fewer ranks: the collective is refused with one line
  bool reduces = false;       // takes -o; redop column is "none" otherwise
  bool rooted = false;        // takes -r; root column is -1 otherwise
  bool in_place_api = false;  // the verb is in place only (torch semantics): send is copied
                              // into recv before out-of-place validation calls
  // In place, nccl-tests does not validate the result (alltoall, sendrecv: its reportErrors is
  // 0 in place), so #wrong reads N/A there; time and bandwidth are measured like any other row.
  bool in_place_unchecked = false;
  // In place, run() needs CallArgs::staging (send and receive share one buffer, and the verbs
  // behind it may not read and write the same memory at once).
  bool in_place_staging = false;
  bool latency_only = false;  // no data: one row of size 0 (barrier)
  // Layout for `elems` elements of the sweep size (size / dtype size) on `n` ranks.
  Layout (*layout)(size_t elems, int n) = nullptr;
  // Instead of `layout`, for a collective whose per-peer amounts come from the run's traffic
  // (PerfOptions::traffic, perf/traffic.h): `rank`'s layout. A traffic of fixed bytes (a
  // matrix) runs one size per dtype, whatever the sweep.
  Layout (*traffic_layout)(size_t elems, DType dt, int n, int rank,
                           const TrafficModel& t) = nullptr;
  // Bytes counted by algbw = count * dtype size * algbw_ranks_factor(n).
  int (*algbw_ranks_factor)(int n) = nullptr;
  double (*busbw_factor)(int n) = nullptr;
  // Fills this rank's send buffer (send_count elements).
  void (*init)(const DataSpec& s, const Layout& l, int rank, int root, void* send) = nullptr;
  // Fills the expected receive buffer of `rank`; returns the element count to check (0 = this
  // rank's output is not defined, e.g. a non-root rank of reduce).
  size_t (*expected)(const DataSpec& s, const Layout& l, int rank, int root, void* want) = nullptr;
  // Submits the call through the ProcessGroup API; every returned Work must be waited on.
  Works (*run)(ProcessGroup& pg, const CallArgs& a) = nullptr;
};

// nullptr when unknown.
const CollectiveDescriptor* find_collective(const std::string& name);
// In the canonical order (all_reduce, all_gather, broadcast, ...).
std::vector<const CollectiveDescriptor*> all_collectives();

// Waits for each Work, in order (rethrows the first failure).
template <typename WorkList>
void wait_all(const WorkList& works) {
  for (const auto& w : works) w->wait();
}

// Helpers shared by descriptors.
inline size_t trim_per_rank(size_t elems, int n) {  // nccl-tests' 4-element alignment
  const size_t align = 4;
  return (elems / (align * static_cast<size_t>(n))) * align;
}
inline int ranks_factor_one(int) { return 1; }
inline int ranks_factor_n(int n) { return n; }
inline double busbw_one(int) { return 1.0; }
inline double busbw_n_minus_1_over_n(int n) { return static_cast<double>(n - 1) / n; }

}  // namespace collie::perf
