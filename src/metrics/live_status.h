#pragma once
// LiveStatus: per-group progress of this process — the GroupTrace's sequence numbers plus the
// ops in flight with their start times — for the debug server's /v1/status and the gauges
// collie_inflight_ops / collie_last_completed_seq. Fed by MetricsObserver (OpObserver hook).
//
// Hot path (started/completed): atomics in a fixed table (kMaxGroups groups, kMaxInflight
// in-flight ops per group tracked individually; more are counted but not listed). No allocation,
// no lock. Snapshots may be slightly torn across fields; each field is read atomically.
// Thread safety: every method is thread-safe, but started() for one group from one thread at a
// time (ProcessGroup's contract: one thread at a time submits a group's ops). Group slots are
// never freed.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "comm/op.h"
#include "core/owned_counter.h"
#include "debug/flight_recorder.h"

namespace collie {

class LiveStatus {
 public:
  static constexpr int kMaxGroups = 64;
  static constexpr int kMaxInflight = 16;

  struct InflightOp {
    OpType op = OpType::Barrier;
    uint64_t seq = 0;
    bool p2p = false;
    uint64_t bytes = 0;
    double age_s = 0;
  };
  struct GroupSnapshot {
    std::string pg;  // pg_id, "0" = world
    std::string desc;
    std::string backend;
    int rank = 0;        // world rank of this process
    int group_rank = 0;  // rank inside the group
    int size = 1;
    uint64_t last_enqueued_seq = 0;  // collective seq
    uint64_t last_started_seq = 0;
    uint64_t last_completed_seq = 0;
    uint64_t last_enqueued_p2p_seq = 0;
    uint64_t last_completed_p2p_seq = 0;
    std::string last_completed_op;  // "" before the first completion
    int64_t inflight = 0;
    uint64_t ops_completed = 0;
    uint64_t ops_failed = 0;
    double since_last_progress_s = 0;  // seconds since the last start or completion
    std::vector<InflightOp> inflight_ops;
  };

  LiveStatus() = default;
  LiveStatus(const LiveStatus&) = delete;
  LiveStatus& operator=(const LiveStatus&) = delete;

  static LiveStatus& global();

  // Registers the group (idempotent; locks, allocates). Returns its slot or -1 when full.
  // REQUIRES: g outlives this LiveStatus (the flight recorder keeps every GroupTrace alive).
  int add_group(const GroupTrace& g);
  // Slot of an added group (lock-free lookup by address); -1 if not added.
  int find_group(const GroupTrace& g) const;

  // `now_ns`: the caller's steady-clock reading (steady_now_ns()), so the hot path reads the
  // clock once per event for every consumer (TracingProcessGroup's OpEvent times).
  void started(int slot, OpType op, uint64_t seq, uint64_t bytes, int64_t now_ns);
  void finished(int slot, OpType op, uint64_t seq, bool ok, int64_t now_ns);

  std::vector<GroupSnapshot> snapshot() const;

 private:
  struct Entry {
    std::atomic<uint64_t> key{0};  // seq | kP2pBit, 0 = free
    std::atomic<uint8_t> op{0};
    std::atomic<uint64_t> bytes{0};
    std::atomic<int64_t> start_ns{0};
  };
  struct Slot {
    // Written once before the slot is published through used_.
    const GroupTrace* trace = nullptr;
    int size = 1;
    std::atomic<int> last_completed_op{-1};
    // In flight = started - completed - failed (snapshot), so finishing an op adds to one
    // counter only. Raised by the slot's owner thread without a locked instruction.
    CounterOwner owner;
    OwnedCounter<uint64_t> started, completed, failed;
    std::atomic<int64_t> last_progress_ns{0};
    std::array<Entry, kMaxInflight> entries;
  };

  std::array<Slot, kMaxGroups> slots_;
  std::atomic<int> used_{0};
  std::mutex mu_;
};

// Steady-clock nanoseconds, the time base of LiveStatus ages.
int64_t steady_now_ns();

}  // namespace collie
