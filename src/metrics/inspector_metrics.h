#pragma once
// NCCL Inspector-compatible series (served at /metrics/inspector): nccl_bus_bandwidth_gbs,
// nccl_collective_exec_time_microseconds, nccl_p2p_bus_bandwidth_gbs,
// nccl_p2p_exec_time_microseconds with Inspector's labels, so NVIDIA's Inspector Grafana template
// works against a collie job. Values per label set as Inspector computes them over a window:
// mean execution time and geometric mean of the per-op bus bandwidth of the ops completed in
// the last window (docs/observability.md).
//
// Hot path (record): lock-free, allocation-free — an open-addressing table of kMaxSeries fixed
// slots keyed by (group, op, message-size bucket), claimed by compare-and-swap; relaxed atomic
// adds. When the table is full an op is only counted in collie_inspector_dropped_ops_total.
// Scrape (serialize): under a mutex; closes the window when it is at least `window` old and
// formats the last closed window. Slots are never freed, so memory is fixed.
// Thread safety: every method is thread-safe.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "comm/op.h"
#include "metrics/live_status.h"

namespace collie {

class Env;
struct GroupTrace;

class InspectorMetrics {
 public:
  static constexpr int kMaxSeries = 512;
  static constexpr int kMaxGroups = LiveStatus::kMaxGroups;

  struct Options {
    std::chrono::milliseconds window{30000};  // Inspector's minimum Prometheus dump interval
    std::string cluster;                      // "" = no cluster label (Prometheus may add one)
    std::string slurm_job_id = "unknown";
    std::string node = "unknown";
    int local_rank = 0;  // gpu="GPU<local_rank>" on nccl; "CPU" on host backends
    // Hosts a group spans (n_nodes); nullopt = not known yet, its series wait for it.
    std::function<std::optional<int>(const GroupTrace&)> node_count;
  };
  // COLLIE_INSPECTOR_WINDOW (duration, default 30s), COLLIE_CLUSTER, COLLIE_JOB_ID (else
  // SLURM_JOB_ID, else "unknown" as Inspector), the local rank of the launcher's variables, the
  // host name; n_nodes from GroupHosts.
  static Options options_from_env(const Env& env);

  explicit InspectorMetrics(Options opts);
  InspectorMetrics(const InspectorMetrics&) = delete;
  InspectorMetrics& operator=(const InspectorMetrics&) = delete;

  // The process-wide instance (options from the process environment at first use).
  static InspectorMetrics& global();

  // Hot path: one completed op. Ops Inspector has no name for are ignored.
  // REQUIRES: group_slot is g's LiveStatus slot (or -1: ignored); g outlives this object.
  void record(int group_slot, const GroupTrace& g, OpType op, uint64_t input_bytes,
              std::chrono::nanoseconds exec);

  // Prometheus text exposition of the last closed window (closing the current one first when
  // it is at least `window` old). now_ns: steady clock (steady_now_ns()).
  std::string serialize(int64_t now_ns);
  std::string serialize() { return serialize(steady_now_ns()); }

  uint64_t dropped_ops() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::atomic<uint64_t> key{0};  // 0 = free; see make_key
    CounterOwner owner;            // the counters below: core/owned_counter.h
    OwnedCounter<uint64_t> count;
    OwnedCounter<uint64_t> exec_ns;
    OwnedCounter<uint64_t> bus_count;  // ops with a bandwidth > 0 (Inspector's busCount)
    OwnedCounter<double> bus_log_sum;
  };
  struct Totals {  // a slot's sums, read at scrape time
    uint64_t count = 0, exec_ns = 0, bus_count = 0;
    double bus_log_sum = 0;
  };
  Slot* find_or_claim(uint64_t key);

  Options opts_;
  std::array<Slot, kMaxSeries> slots_;
  std::array<std::atomic<const GroupTrace*>, kMaxGroups> groups_{};
  std::atomic<uint64_t> dropped_{0};
  std::mutex mu_;  // the scrape-side state below
  std::array<Totals, kMaxSeries> at_window_start_{};
  std::array<Totals, kMaxSeries> last_window_{};
  int64_t window_start_ns_ = 0;
};

}  // namespace collie
