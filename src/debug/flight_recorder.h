#pragma once
// FlightRecorder: an always-on, per-process ring buffer of the last N operations of every
// group (torch's "flight recorder"), dumped as JSON when something goes wrong.
//
// Hot path (record / mark_started / mark_completed): no allocation, no I/O and no lock shared
// between threads: the record id comes from an atomic counter and each ring slot is a seqlock
// (a version word and the op packed into atomic words, 256 bytes, of which an op with 1-D
// tensors writes the first 128; the profiling name is rebuilt at dump time from the group, op
// and peer), so a writer only ever waits for the other writer of the same slot (an op's
// submitting and completing threads) and a dump never blocks an op: it copies each slot,
// retrying a slot that was being written. JSON is built at dump time from that snapshot.
// record() asks the CPU for the next slot's cache lines (a prefetch hint), so that an op whose
// data evicted the ring does not wait on its slot.
// Field names follow torch's dump (REFERENCE.md) so its users and tools read collie's dumps.
//
// Ownership: FlightRecorder::global() lives for the whole process; GroupTrace objects are shared
// by the recorder (for pg_config / pg_status) and the TracingProcessGroup that updates them.
// Thread safety: every public method is safe from any thread.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/op.h"
#include "core/owned_counter.h"

namespace collie {

class Clock;
class Env;
class Store;

enum class FrState : uint8_t { Scheduled, Started, Completed };
std::string_view fr_state_name(FrState s);

// Per-group identity and progress (torch's pg_config and pg_status). Seq counters are atomics so
// the hot path updates them without the recorder's lock.
struct GroupTrace {
  std::string pg_id;  // GroupInfo::name
  std::string desc;
  std::string backend;
  int rank = 0;                   // rank in the group
  int global_rank = 0;            // rank in the world group
  std::vector<int> global_ranks;  // group rank -> world rank
  std::shared_ptr<Store> store;   // the group's store (dump requests); may be null in tests
  std::atomic<uint64_t> last_enqueued_collective{0};
  std::atomic<uint64_t> last_started_collective{0};
  // Raised by whichever thread completes an op, without a locked instruction by the first one
  // that did (the submitting thread, for inline ops): core/owned_counter.h.
  CounterOwner completing;
  OwnedMax<uint64_t> last_completed_collective;
  std::atomic<uint64_t> last_enqueued_p2p{0};
  OwnedMax<uint64_t> last_completed_p2p;
};

// One recorded op as a snapshot gives it (the ring keeps it packed; flight_recorder.cpp).
struct FrEntry {
  static constexpr int kNameLen = 48;
  struct Sizes {
    std::array<int64_t, Shape::kMaxDims> dims{};
    uint8_t ndim = 0;
    bool present = false;  // false: no tensor (barrier, gather output on a non-root)
    DType dtype = DType::Float32;
  };
  uint64_t record_id = 0;             // 0 = empty slot
  const GroupTrace* group = nullptr;  // kept alive by the recorder's group list
  uint64_t collective_seq_id = 0;
  uint64_t p2p_seq_id = 0;
  uint64_t op_id = 0;  // per group, counts collectives and p2p together
  OpType op = OpType::Barrier;
  char profiling_name[kNameLen] = {};  // "gloo:all_reduce", "gloo:send 1->2"
  int64_t time_created_ns = 0;
  // What mark_started / mark_completed change, side by side so a mark rewrites a few words.
  int64_t time_discovered_started_ns = 0;
  int64_t time_discovered_completed_ns = 0;
  FrState state = FrState::Scheduled;
  bool retired = false;
  bool failed = false;
  Sizes input;
  Sizes output;
  int64_t timeout_ms = 0;
  bool is_p2p = false;
  int root = -1;  // global rank, ops with a root
  int peer = -1;  // global rank, send/recv
  ReduceOp reduce_op = ReduceOp::Sum;
  bool has_reduce_op = false;
  uint64_t thread_id = 0;
  char thread_name[16] = {};
};

// A group with its progress counters as read at one moment (pg_status).
struct FrGroupSnapshot {
  std::shared_ptr<GroupTrace> group;
  uint64_t last_enqueued_collective = 0, last_started_collective = 0, last_completed_collective = 0,
           last_enqueued_p2p = 0, last_completed_p2p = 0;
};

// What one dump shows, taken once so that every format of the dump tells the same story.
// Entry times are wall-clock nanoseconds derived from the recorder's monotonic clock at the
// moment of the snapshot (time_ns): differences within one snapshot, such as an op's age at the
// dump, stay true when the wall clock steps; the absolute times are as right as the wall clock
// was at time_ns.
struct FrSnapshot {
  std::vector<FrEntry> entries;  // oldest first
  std::vector<FrGroupSnapshot> groups;
  int64_t time_ns = 0;  // wall clock when the snapshot was taken (the dump time)
  std::string host;     // this machine's name (gethostname), written as the dump's "hostname"
};

// Why a dump was taken. Request: a person or a tool asked (SIGUSR1, POST /v1/dump, a store
// dump_request, a live view) while the job may be running fine. Failure: collie saw something go
// wrong (a timeout, a desync, an error, a crash). Written as "trigger" into the JSON dump, so the
// analyzer knows whether young ops in flight are a hang or a snapshot of a running job.
enum class DumpTrigger { Request, Failure };
const char* dump_trigger_name(DumpTrigger t);  // "request" | "failure"

// Which files a dump writes: COLLIE_FR_DUMP_FORMAT = json (default) | torch | json,torch;
// COLLIE_FR_DUMP_PREFIX names torch's files (default nccl_trace_rank_, as torch's own);
// COLLIE_FR_TORCH_BACKEND names the backend in torch's profiling_name: nccl (default, the one
// every fr_trace release accepts), gloo, xccl, ..., or "group" for each group's own (torch_dump.h).
struct FrDumpFormat {
  bool json = true;    // <dir>/collie_fr_rank_<rank>.json
  bool torch = false;  // <dir>/<torch_prefix><rank>: PyTorch's pickled layout
  std::string torch_prefix = "nccl_trace_rank_";
  std::string torch_backend = "nccl";  // empty: each group's own backend
  // Throws InvalidArgument on an unknown format or a prefix that has a '/' or ends in a digit.
  static FrDumpFormat from_env(const Env& env);
};

class FlightRecorder {
 public:
  // capacity 0 disables recording (record() returns 0 and the marks are no-ops).
  explicit FlightRecorder(size_t capacity, Clock* clock = nullptr);
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // The largest ring COLLIE_FR_BUFFER_SIZE may ask for: about 256 MB per process, and a JSON
  // dump of about 0.5 GB (collie analyze reads JSON dumps up to 1 GiB).
  static constexpr size_t kMaxCapacity = 1000000;
  // The process recorder, sized from COLLIE_FR_BUFFER_SIZE (default 2000, 0 = off). Throws
  // InvalidArgument naming the variable when it is not in 0..kMaxCapacity or the ring cannot be
  // allocated.
  static FlightRecorder& global();
  static size_t capacity_from_env(const Env& env);

  // Registers a group for pg_config / pg_status. The recorder keeps it alive.
  void add_group(std::shared_ptr<GroupTrace> g);

  // Records `call` as scheduled; returns its record id (0 when disabled). `now_ns`: the time of
  // creation when the caller has just read clock().mono_ns() (0 = read it here). The recorder
  // keeps monotonic times; snapshots convert them to the wall clock.
  uint64_t record(const GroupTrace& g, uint64_t op_id, const OpCall& call, int64_t now_ns = 0);
  // Marks are ignored when the slot has since been reused (ring wrapped). `now_ns` as above.
  void mark_started(uint64_t id);
  void mark_completed(uint64_t id, bool failed, int64_t now_ns = 0);

  size_t capacity() const { return capacity_; }
  uint64_t total_recorded() const;
  // Entries oldest first (a copy; the recorder keeps running), their times converted to the wall
  // clock as FrSnapshot says; *time_ns (when given) receives the snapshot's wall-clock time.
  std::vector<FrEntry> snapshot(int64_t* time_ns = nullptr) const;
  std::vector<std::shared_ptr<GroupTrace>> groups() const;
  std::vector<FrGroupSnapshot> groups_snapshot() const;
  FrSnapshot full_snapshot() const;  // snapshot() and groups_snapshot()
  Clock& clock() const { return *clock_; }

  // The dump as JSON text: {version, rank, reason, pg_config, pg_status, entries, ...}.
  // max_entries keeps only the newest entries (a live view that needs the recent past only);
  // the dump then says "wrapped": true, as when the ring itself lost older entries.
  std::string dump_json(int rank, const std::string& reason, size_t max_entries = SIZE_MAX) const;
  // The same of a snapshot taken earlier; `cut`: older entries were left out.
  std::string dump_json(int rank, const std::string& reason, const FrSnapshot& snap, bool cut,
                        DumpTrigger trigger = DumpTrigger::Request) const;
  // Writes the dump in each format of `format` into the first of `dirs`, each file atomically
  // (temp file + rename), and gives the others hard links to those files (the same bytes, never
  // written twice; written again only where the file system cannot link). Returns the paths,
  // joined by " and ". Throws Error when a directory cannot be written.
  std::string dump_to_dir(const std::vector<std::string>& dirs, int rank, const std::string& reason,
                          const FrDumpFormat& format = {},
                          DumpTrigger trigger = DumpTrigger::Request) const;
  std::string dump_to_dir(const std::string& dir, int rank, const std::string& reason,
                          const FrDumpFormat& format = {},
                          DumpTrigger trigger = DumpTrigger::Request) const {
    return dump_to_dir(std::vector<std::string>{dir}, rank, reason, format, trigger);
  }

 private:
  struct Slot;  // flight_recorder.cpp
  struct SlotDeleter {
    void operator()(Slot* s) const;
  };
  // Applies `mark` to the entry `id` (under its slot's seqlock) unless the slot was reused.
  template <typename F>
  void mark(uint64_t id, F&& fn);
  std::unique_ptr<Slot[], SlotDeleter> slots_;
  size_t capacity_ = 0;
  Clock* clock_;
  std::atomic<uint64_t> next_id_{1};
  mutable std::mutex groups_mu_;
  std::vector<std::shared_ptr<GroupTrace>> groups_;
};

// File name of a rank's dump inside the dump directory.
std::string fr_dump_file_name(int rank);
// 2: pg_config ranks are a rank_ranges string ("0-4095"; a list of numbers in 1).
inline constexpr int kFrDumpVersion = 2;

}  // namespace collie
