#pragma once
// Prometheus metrics of one process (names per REFERENCE.md, base units, few-valued labels).
//
// Hot path (record_op / record_error): relaxed atomic adds into a fixed table indexed by
// (backend, collective, size class) — no allocation, no lock. The table is turned into metric
// families only when /metrics is scraped, and only rows that saw an op are exposed.
// Rare events (desync, barrier timeout, perf results) go through prometheus-cpp families.
//
// Ownership: Metrics owns its prometheus::Registry. Thread safety: every method is thread-safe.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "comm/op.h"
#include "core/owned_counter.h"

namespace prometheus {
class Registry;
template <typename T>
class Family;
class Counter;
class Gauge;
}  // namespace prometheus

namespace collie {

class LiveStatus;

// Power-of-4 size classes: le_1KiB, le_4KiB, ..., le_64MiB, gt_64MiB.
inline constexpr int kNumSizeClasses = 10;
int size_class_index(uint64_t bytes);
std::string_view size_class_name(int index);

// Upper bounds (seconds) of collie_collective_duration_seconds; +Inf is implicit.
inline constexpr std::array<double, 15> kDurationBuckets = {
    1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1, 3, 10, 30, 100};

// Backends get a small index once (at group creation); unknown names beyond the table share
// the last slot, exposed as backend="other".
inline constexpr int kMaxBackends = 8;

class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // The process-wide instance served at /metrics.
  static Metrics& global();

  // Every series carries rank="<rank>" once set (the process's world rank).
  void set_rank(int rank);
  int rank() const { return rank_.load(std::memory_order_relaxed); }

  // May lock and allocate: call at group creation, not per op.
  int backend_index(std::string_view backend);
  // Lock-free lookup of a registered backend; -1 when backend_index() was never called for it.
  int find_backend(std::string_view backend) const;

  // Hot path. REQUIRES: backend is a value returned by backend_index().
  void record_op(int backend, OpType op, uint64_t bytes, std::chrono::nanoseconds duration);
  void record_error(int backend, OpType op, uint64_t bytes);

  // Rare events.
  void record_desync(std::string_view backend);
  void record_barrier_timeout(std::string_view backend);
  // Bandwidth of the last completed perf size (GB/s, nccl-tests definitions).
  void set_perf_result(std::string_view backend, std::string_view collective,
                       std::string_view dtype, uint64_t bytes, double algbw_gbps,
                       double busbw_gbps);

  // Prometheus text exposition (format 0.0.4) of everything above plus `live` (per-group gauges
  // collie_inflight_ops and collie_last_completed_seq), when given.
  std::string serialize(const LiveStatus* live = nullptr) const;

 private:
  struct Row {  // raised by its owner thread without a locked instruction (owned_counter.h)
    CounterOwner owner;
    OwnedCounter<uint64_t> bytes;  // the op count is the buckets' sum (serialize)
    OwnedCounter<uint64_t> errors;
    OwnedCounter<uint64_t> duration_ns;
    std::array<OwnedCounter<uint64_t>, kDurationBuckets.size() + 1> buckets{};  // not cumulative
  };
  Row& row(int backend, OpType op, uint64_t bytes);
  prometheus::Counter& rare_counter(prometheus::Family<prometheus::Counter>& f,
                                    std::string_view backend);

  std::array<Row, kMaxBackends * kNumOpTypes * kNumSizeClasses> rows_;
  std::array<std::string, kMaxBackends> backend_names_;
  std::atomic<int> num_backends_{0};
  std::atomic<int> rank_{-1};
  std::mutex mu_;  // backend registration and the prometheus-cpp families below
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* desync_ = nullptr;
  prometheus::Family<prometheus::Counter>* barrier_timeouts_ = nullptr;
  prometheus::Family<prometheus::Gauge>* busbw_ = nullptr;
  prometheus::Family<prometheus::Gauge>* algbw_ = nullptr;
};

}  // namespace collie
