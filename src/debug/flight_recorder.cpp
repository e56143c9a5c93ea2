#include "debug/flight_recorder.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <type_traits>

#include "core/atomic_file.h"
#include "core/clock.h"
#include "core/env.h"
#include "core/error.h"
#include "core/printable.h"
#include "debug/rank_ranges.h"
#include "debug/torch_dump.h"

namespace collie {
namespace {

constexpr size_t kDefaultCapacity = 2000;

// Thread identity is cached per thread so the hot path makes no system call. A Linux thread id
// fits in 32 bits (pid_max is at most 2^22): the ring keeps it beside the op's state.
struct ThreadIdentity {
  uint64_t id = 0;
  char name[16] = {};
  ThreadIdentity() {
    id = static_cast<uint64_t>(::syscall(SYS_gettid));
    pthread_getname_np(pthread_self(), name, sizeof(name));
  }
};

const ThreadIdentity& this_thread_identity() {
  thread_local ThreadIdentity t;
  return t;
}

nlohmann::json sizes_json(const FrEntry::Sizes& s) {
  auto out = nlohmann::json::array();
  if (!s.present) return out;
  out.push_back(std::vector<int64_t>(s.dims.begin(), s.dims.begin() + s.ndim));
  return out;
}

nlohmann::json dtypes_json(const FrEntry::Sizes& s) {
  auto out = nlohmann::json::array();
  if (s.present) out.push_back(std::string(dtype_name(s.dtype)));
  return out;
}

nlohmann::json ns_or_null(int64_t ns) {
  return ns == 0 ? nlohmann::json(nullptr) : nlohmann::json(ns);
}

nlohmann::json entry_json(const FrEntry& e) {
  nlohmann::json j;
  j["record_id"] = e.record_id;
  j["pg_id"] = e.group->pg_id;
  j["process_group"] = {e.group->pg_id, e.group->desc};
  j["collective_seq_id"] = e.collective_seq_id;
  j["p2p_seq_id"] = e.p2p_seq_id;
  j["op_id"] = e.op_id;
  j["profiling_name"] = std::string(e.profiling_name);
  j["time_created_ns"] = e.time_created_ns;
  j["time_discovered_started_ns"] = ns_or_null(e.time_discovered_started_ns);
  j["time_discovered_completed_ns"] = ns_or_null(e.time_discovered_completed_ns);
  if (e.state == FrState::Completed && e.time_discovered_completed_ns != 0) {
    j["duration_ms"] =
        static_cast<double>(e.time_discovered_completed_ns - e.time_created_ns) / 1e6;
  } else {
    j["duration_ms"] = nullptr;
  }
  j["input_sizes"] = sizes_json(e.input);
  j["input_dtypes"] = dtypes_json(e.input);
  j["output_sizes"] = sizes_json(e.output);
  j["output_dtypes"] = dtypes_json(e.output);
  j["state"] = std::string(fr_state_name(e.state));
  j["retired"] = e.retired;
  j["failed"] = e.failed;
  j["timeout_ms"] = e.timeout_ms;
  j["is_p2p"] = e.is_p2p;
  // collie additions: what the desync fingerprint has and torch's entries lack.
  j["root"] = e.root;
  j["peer"] = e.peer;
  j["reduce_op"] = e.has_reduce_op ? nlohmann::json(std::string(reduce_op_name(e.reduce_op)))
                                   : nlohmann::json(nullptr);
  j["thread_id"] = e.thread_id;
  j["thread_name"] = std::string(e.thread_name);
  return j;
}

// gethostname, "" when it cannot be read.
std::string this_host() {
  char host[256] = {};
  return gethostname(host, sizeof host - 1) == 0 ? host : "";
}

// Writes <dir>/<name> atomically (core/atomic_file.h), so a reader never sees half a dump.
std::string write_atomically(const std::string& dir, const std::string& name,
                             const std::string& bytes, int rank) {
  const std::string path = (std::filesystem::path(dir) / name).string();
  try {
    write_file_atomic(path, bytes);
  } catch (const Error& e) {
    throw Error(
        fmt::format("[Rank {}] flight recorder: {} (check COLLIE_FR_DUMP_DIR)", rank, e.what()));
  }
  return path;
}

}  // namespace

std::string_view fr_state_name(FrState s) {
  switch (s) {
    case FrState::Scheduled:
      return "scheduled";
    case FrState::Started:
      return "started";
    case FrState::Completed:
      return "completed";
  }
  return "?";
}

std::string fr_dump_file_name(int rank) { return fmt::format("collie_fr_rank_{}.json", rank); }

// A ring slot: a seqlock over the op kept as atomic words in a compact layout of its own (not
// FrEntry's): record() writes each word once, straight from the call, and only the words the op
// has (its dims), so a common op touches the slot's first two cache lines; read() unpacks them
// into an FrEntry, rebuilding the profiling name from the group, op and peer. The version is odd
// while a writer holds the slot; readers copy the words and retry when the version moved.
struct alignas(64) FlightRecorder::Slot {
  // Word indices. kFlags packs: op | reduce_op << 8 | input dtype << 16 | output dtype << 24 |
  // input ndim << 32 | output ndim << 40 | kInPresent | kOutPresent | kIsP2p | kHasReduceOp.
  // kMarks: state | retired << 8 | failed << 9 | thread id (a pid_t) << 32. kRootPeer: root
  // (low 32 bits) | peer (high). kDims: the input's ndim dims, then the output's. With the
  // version, a 1-D op's words fill the slot's first two cache lines exactly.
  enum : size_t {
    kRecordId,
    kGroup,
    kSeq,
    kOpId,
    kCreated,
    kStarted,
    kCompleted,
    kMarks,
    kFlags,
    kTimeout,
    kRootPeer,
    kThreadName,  // 2 words
    kDims = kThreadName + 2,
    kWords = kDims + 2 * Shape::kMaxDims
  };
  static constexpr uint64_t kInPresent = uint64_t{1} << 48, kOutPresent = uint64_t{1} << 49,
                            kIsP2p = uint64_t{1} << 50, kHasReduceOp = uint64_t{1} << 51;
  static constexpr uint64_t kRetired = uint64_t{1} << 8, kFailed = uint64_t{1} << 9;
  static constexpr uint64_t kThreadIdMask = ~uint64_t{0} << 32;
  std::atomic<uint64_t> version{0};
  std::array<std::atomic<uint64_t>, kWords> words{};

  uint64_t lock() {
    uint64_t v = version.load(std::memory_order_relaxed);
    for (;;) {
      if ((v & 1) == 0 && version.compare_exchange_weak(v, v + 1, std::memory_order_acquire,
                                                        std::memory_order_relaxed)) {
        // Readers that see any word written below also see the odd version.
        std::atomic_thread_fence(std::memory_order_release);
        return v;
      }
      if (v & 1) {
        std::this_thread::yield();  // the other writer of this op's slot is mid-copy
        v = version.load(std::memory_order_relaxed);
      }
    }
  }
  void unlock(uint64_t v) { version.store(v + 2, std::memory_order_release); }
  uint64_t get(size_t i) const { return words[i].load(std::memory_order_relaxed); }
  void put(size_t i, uint64_t w) { words[i].store(w, std::memory_order_relaxed); }
  uint64_t record_id() const { return get(kRecordId); }
  // A consistent copy, retried while a writer holds the slot. A slot whose writer never lets go
  // (it crashed there, and this is the crash dump) reads as empty (record_id 0).
  FrEntry read() const {
    std::array<uint64_t, kWords> w;
    for (int tries = 0; tries < 100000; ++tries) {
      const uint64_t v = version.load(std::memory_order_acquire);
      if ((v & 1) == 0) {
        for (size_t i = 0; i < kWords; ++i) w[i] = get(i);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (version.load(std::memory_order_relaxed) == v) return unpack(w);
      }
      if (tries > 16) std::this_thread::yield();
    }
    return FrEntry{};
  }
  static FrEntry unpack(const std::array<uint64_t, kWords>& w);
};

namespace {
// torch's profiling name: "gloo:all_reduce", "gloo:send 1->2", cut at kNameLen - 1 characters.
void write_profiling_name(char (&out)[FrEntry::kNameLen], const GroupTrace& g, OpType type,
                          int peer) {
  const std::string_view op = op_name(type);
  if (type == OpType::Send) {
    fmt::format_to_n(out, FrEntry::kNameLen - 1, "{}:{} {}->{}", g.backend, op, g.global_rank,
                     peer);
  } else if (type == OpType::Recv) {
    fmt::format_to_n(out, FrEntry::kNameLen - 1, "{}:{} {}<-{}", g.backend, op, g.global_rank,
                     peer);
  } else {
    char* p = out;
    char* const end = out + FrEntry::kNameLen - 1;
    for (std::string_view part : {std::string_view(g.backend), std::string_view(":"), op}) {
      const size_t n = std::min(part.size(), static_cast<size_t>(end - p));
      std::memcpy(p, part.data(), n);
      p += n;
    }
  }
}
}  // namespace

FrEntry FlightRecorder::Slot::unpack(const std::array<uint64_t, kWords>& w) {
  FrEntry e;
  e.record_id = w[kRecordId];
  if (e.record_id == 0) return e;
  e.group = reinterpret_cast<const GroupTrace*>(static_cast<uintptr_t>(w[kGroup]));
  const uint64_t f = w[kFlags];
  e.op = static_cast<OpType>(f & 0xff);
  e.is_p2p = (f & kIsP2p) != 0;
  (e.is_p2p ? e.p2p_seq_id : e.collective_seq_id) = w[kSeq];
  e.op_id = w[kOpId];
  e.time_created_ns = static_cast<int64_t>(w[kCreated]);
  e.time_discovered_started_ns = static_cast<int64_t>(w[kStarted]);
  e.time_discovered_completed_ns = static_cast<int64_t>(w[kCompleted]);
  e.state = static_cast<FrState>(w[kMarks] & 0xff);
  e.retired = (w[kMarks] & kRetired) != 0;
  e.failed = (w[kMarks] & kFailed) != 0;
  size_t d = kDims;
  FrEntry::Sizes* sizes[2] = {&e.input, &e.output};
  for (int k = 0; k < 2; ++k) {
    FrEntry::Sizes& s = *sizes[k];
    s.present = (f & (k == 0 ? kInPresent : kOutPresent)) != 0;
    if (!s.present) continue;
    s.dtype = static_cast<DType>((f >> (16 + 8 * k)) & 0xff);
    s.ndim = static_cast<uint8_t>((f >> (32 + 8 * k)) & 0xff);
    for (int i = 0; i < s.ndim; ++i) s.dims[i] = static_cast<int64_t>(w[d++]);
  }
  e.timeout_ms = static_cast<int64_t>(w[kTimeout]);
  e.root = static_cast<int32_t>(static_cast<uint32_t>(w[kRootPeer]));
  e.peer = static_cast<int32_t>(static_cast<uint32_t>(w[kRootPeer] >> 32));
  e.has_reduce_op = (f & kHasReduceOp) != 0;
  e.reduce_op = static_cast<ReduceOp>((f >> 8) & 0xff);
  e.thread_id = w[kMarks] >> 32;
  std::memcpy(e.thread_name, &w[kThreadName], sizeof(e.thread_name));
  e.thread_name[sizeof(e.thread_name) - 1] = '\0';
  write_profiling_name(e.profiling_name, *e.group, e.op, e.peer);
  return e;
}

void FlightRecorder::SlotDeleter::operator()(Slot* s) const { delete[] s; }

FlightRecorder::FlightRecorder(size_t capacity, Clock* clock)
    : slots_(capacity ? new Slot[capacity] : nullptr),
      capacity_(capacity),
      clock_(clock ? clock : &Clock::system()) {
  static_assert(sizeof(Slot) == 256);  // 4 cache lines; an op with 1-D tensors writes 2
}

size_t FlightRecorder::capacity_from_env(const Env& env) {
  const auto v = env.get_int_in(
      "COLLIE_FR_BUFFER_SIZE", 0, static_cast<long long>(kMaxCapacity),
      fmt::format(" (ops the flight recorder keeps, {} bytes each; 0 turns it off)", sizeof(Slot)));
  return v ? static_cast<size_t>(*v) : kDefaultCapacity;
}

FlightRecorder& FlightRecorder::global() {
  static FlightRecorder& fr = []() -> FlightRecorder& {
    const size_t n = capacity_from_env(Env::process());
    try {
      return *new FlightRecorder(n);  // lives as long as the process: threads dump it at exit
    } catch (const std::bad_alloc&) {
      throw InvalidArgument(fmt::format(
          "COLLIE_FR_BUFFER_SIZE={}: cannot allocate the flight recorder's {} bytes; lower it", n,
          n * sizeof(Slot)));
    }
  }();
  return fr;
}

void FlightRecorder::add_group(std::shared_ptr<GroupTrace> g) {
  std::lock_guard<std::mutex> lk(groups_mu_);
  groups_.push_back(std::move(g));
}

std::vector<std::shared_ptr<GroupTrace>> FlightRecorder::groups() const {
  std::lock_guard<std::mutex> lk(groups_mu_);
  return groups_;
}

uint64_t FlightRecorder::record(const GroupTrace& g, uint64_t op_id, const OpCall& call,
                                int64_t now_ns) {
  if (capacity_ == 0) return 0;
  const ThreadIdentity& self = this_thread_identity();
  const int64_t now = now_ns != 0 ? now_ns : clock_->mono_ns();
  auto global = [&](int group_rank) {
    return group_rank >= 0 && group_rank < static_cast<int>(g.global_ranks.size())
               ? g.global_ranks[group_rank]
               : group_rank;
  };
  const bool p2p = is_p2p(call.type);
  const int root = has_root(call.type) ? global(call.root) : -1;
  const int peer = p2p ? global(call.peer) : -1;
  uint64_t flags = static_cast<uint64_t>(call.type) | static_cast<uint64_t>(call.reduce_op) << 8 |
                   (p2p ? Slot::kIsP2p : 0) | (has_reduce_op(call.type) ? Slot::kHasReduceOp : 0);
  // A tensor's dims: its shape, or [numel] when it has none (TensorView::effective_shape).
  const TensorView* tensors[2] = {&call.input, &call.output};
  uint8_t ndims[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    const TensorView& t = *tensors[k];
    if (t.data == nullptr && t.numel == 0) continue;  // no tensor (barrier, non-root output)
    ndims[k] = t.shape.ndim > 0 ? std::min<uint8_t>(t.shape.ndim, Shape::kMaxDims) : 1;
    flags |= (k == 0 ? Slot::kInPresent : Slot::kOutPresent) |
             static_cast<uint64_t>(t.dtype) << (16 + 8 * k) |
             static_cast<uint64_t>(ndims[k]) << (32 + 8 * k);
  }
  uint64_t name[2];
  std::memcpy(name, self.name, sizeof(name));
  const uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  Slot& s = slots_[(id - 1) % capacity_];
  const uint64_t v = s.lock();
  // A thread that took a later id for this slot (the ring wrapped meanwhile) keeps it.
  if (s.record_id() < id) {
    s.put(Slot::kRecordId, id);
    s.put(Slot::kGroup, static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&g)));
    s.put(Slot::kSeq, call.seq);
    s.put(Slot::kOpId, op_id);
    s.put(Slot::kCreated, static_cast<uint64_t>(now));
    s.put(Slot::kStarted, 0);
    s.put(Slot::kCompleted, 0);
    s.put(Slot::kMarks, static_cast<uint64_t>(FrState::Scheduled) | self.id << 32);
    s.put(Slot::kFlags, flags);
    s.put(Slot::kTimeout, static_cast<uint64_t>(call.timeout.count()));
    s.put(Slot::kRootPeer, static_cast<uint64_t>(static_cast<uint32_t>(root)) |
                               static_cast<uint64_t>(static_cast<uint32_t>(peer)) << 32);
    s.put(Slot::kThreadName, name[0]);
    s.put(Slot::kThreadName + 1, name[1]);
    size_t d = Slot::kDims;
    for (int k = 0; k < 2; ++k) {
      const TensorView& t = *tensors[k];
      if (ndims[k] == 0) continue;
      if (t.shape.ndim == 0) {
        s.put(d++, static_cast<uint64_t>(t.numel));
      } else {
        for (int i = 0; i < ndims[k]; ++i) s.put(d++, static_cast<uint64_t>(t.shape.dims[i]));
      }
    }
  }
  s.unlock(v);
  // Ask for the next op's slot now: a fresh slot per op is the recorder's one certain cache
  // miss, and an op's data (an MPI all_reduce of 16-256 KiB) evicts the ring between ops, so
  // the next record() would wait on it. A hint only (no other effect): in overhead_mpi, 10
  // interleaved rounds, it took the stack's time over raw MPI_Allreduce at 64 KiB from 0.49 to
  // 0.39 us (p50, median of rounds; scripts/bench/README.md).
  const char* next = reinterpret_cast<const char*>(&slots_[id % capacity_]);
  for (size_t b = 0; b < sizeof(Slot); b += 64) __builtin_prefetch(next + b, /*rw=*/1);
  return id;
}

template <typename F>
void FlightRecorder::mark(uint64_t id, F&& fn) {
  if (id == 0 || capacity_ == 0) return;
  Slot& s = slots_[(id - 1) % capacity_];
  const uint64_t v = s.lock();
  if (s.record_id() == id) fn(s);
  s.unlock(v);
}

void FlightRecorder::mark_started(uint64_t id) {
  if (id == 0) return;
  const int64_t now = clock_->mono_ns();
  mark(id, [&](Slot& s) {
    const uint64_t marks = s.get(Slot::kMarks);
    if ((marks & 0xff) != static_cast<uint64_t>(FrState::Scheduled)) return;
    s.put(Slot::kStarted, static_cast<uint64_t>(now));
    s.put(Slot::kMarks, (marks & Slot::kThreadIdMask) | static_cast<uint64_t>(FrState::Started));
  });
}

void FlightRecorder::mark_completed(uint64_t id, bool failed, int64_t now_ns) {
  if (id == 0) return;
  const int64_t now = now_ns != 0 ? now_ns : clock_->mono_ns();
  mark(id, [&](Slot& s) {
    if (s.get(Slot::kStarted) == 0) s.put(Slot::kStarted, static_cast<uint64_t>(now));
    s.put(Slot::kCompleted, static_cast<uint64_t>(now));
    s.put(Slot::kMarks, (s.get(Slot::kMarks) & Slot::kThreadIdMask) |
                            static_cast<uint64_t>(FrState::Completed) | Slot::kRetired |
                            (failed ? Slot::kFailed : 0));
  });
}

uint64_t FlightRecorder::total_recorded() const {
  return next_id_.load(std::memory_order_relaxed) - 1;
}

std::vector<FrEntry> FlightRecorder::snapshot(int64_t* time_ns) const {
  std::vector<FrEntry> out;
  out.reserve(capacity_);
  for (size_t i = 0; i < capacity_; ++i) {
    if (slots_[i].record_id() == 0) continue;
    FrEntry e = slots_[i].read();
    if (e.record_id != 0) out.push_back(e);
  }
  // Read after the copy, so no entry was created after the snapshot's time.
  const int64_t mono = clock_->mono_ns();
  const int64_t wall = clock_->wall_ns();
  // One offset for the whole snapshot: ages (dump time - creation) are monotonic differences.
  const int64_t offset = wall - mono;
  for (FrEntry& e : out) {
    for (int64_t* t :
         {&e.time_created_ns, &e.time_discovered_started_ns, &e.time_discovered_completed_ns})
      if (*t != 0) *t += offset;
  }
  if (time_ns != nullptr) *time_ns = wall;
  std::sort(out.begin(), out.end(),
            [](const FrEntry& a, const FrEntry& b) { return a.record_id < b.record_id; });
  return out;
}

std::string FlightRecorder::dump_json(int rank, const std::string& reason,
                                      size_t max_entries) const {
  int64_t time_ns = 0;
  std::vector<FrEntry> entries = snapshot(&time_ns);
  const bool cut = entries.size() > max_entries;
  if (cut) entries.erase(entries.begin(), entries.end() - static_cast<ptrdiff_t>(max_entries));
  return dump_json(rank, reason,
                   FrSnapshot{std::move(entries), groups_snapshot(), time_ns, this_host()}, cut);
}

std::vector<FrGroupSnapshot> FlightRecorder::groups_snapshot() const {
  std::vector<FrGroupSnapshot> out;
  for (auto& g : groups()) {
    FrGroupSnapshot s;
    s.last_enqueued_collective = g->last_enqueued_collective.load();
    s.last_started_collective = g->last_started_collective.load();
    s.last_completed_collective = g->last_completed_collective.load();
    s.last_enqueued_p2p = g->last_enqueued_p2p.load();
    s.last_completed_p2p = g->last_completed_p2p.load();
    s.group = std::move(g);
    out.push_back(std::move(s));
  }
  return out;
}

FrSnapshot FlightRecorder::full_snapshot() const {
  FrSnapshot s;
  s.entries = snapshot(&s.time_ns);
  s.groups = groups_snapshot();
  s.host = this_host();
  return s;
}

const char* dump_trigger_name(DumpTrigger t) {
  return t == DumpTrigger::Failure ? "failure" : "request";
}

std::string FlightRecorder::dump_json(int rank, const std::string& reason, const FrSnapshot& snap,
                                      bool cut, DumpTrigger trigger) const {
  const std::vector<FrEntry>& entries = snap.entries;
  nlohmann::json j;
  j["version"] = kFrDumpVersion;
  j["rank"] = rank;
  j["reason"] = reason;
  j["trigger"] = dump_trigger_name(trigger);
  j["dump_time_ns"] = snap.time_ns != 0 ? snap.time_ns : clock_->wall_ns();
  // Where the rank ran: collie analyze names the hosts of the ranks it blames.
  if (!snap.host.empty()) j["hostname"] = snap.host;
  j["buffer_size"] = capacity_;
  const uint64_t total = total_recorded();
  j["total_recorded"] = total;
  j["wrapped"] = total > capacity_ || cut;
  int world = 0;
  nlohmann::json config = nlohmann::json::object();
  nlohmann::json status = nlohmann::json::object();
  for (const FrGroupSnapshot& gs : snap.groups) {
    const GroupTrace* g = gs.group.get();
    // Ranges ("0-4095"): a list of numbers made every dump of an N-rank job O(N).
    config[g->pg_id] = {{"name", g->pg_id},
                        {"desc", g->desc},
                        {"backend", g->backend},
                        {"ranks", rank_ranges(g->global_ranks)}};
    status[g->pg_id] = {
        {"last_enqueued_collective", gs.last_enqueued_collective},
        {"last_started_collective", gs.last_started_collective},
        {"last_completed_collective", gs.last_completed_collective},
        {"last_enqueued_p2p", gs.last_enqueued_p2p},
        {"last_completed_p2p", gs.last_completed_p2p},
    };
    if (g->pg_id == "0") world = static_cast<int>(g->global_ranks.size());
  }
  j["world_size"] = world;
  j["pg_config"] = std::move(config);
  j["pg_status"] = std::move(status);
  auto arr = nlohmann::json::array();
  for (const FrEntry& e : entries) arr.push_back(entry_json(e));
  j["entries"] = std::move(arr);
  return j.dump(1);
}

std::string FlightRecorder::dump_to_dir(const std::vector<std::string>& dirs, int rank,
                                        const std::string& reason, const FrDumpFormat& format,
                                        DumpTrigger trigger) const {
  std::string paths;
  auto add = [&](const std::string& p) { paths += (paths.empty() ? "" : " and ") + p; };
  // One snapshot for every format and folder: the files of one dump tell the same story.
  const FrSnapshot snap = full_snapshot();
  const std::string json = format.json ? dump_json(rank, reason, snap, false, trigger) : "";
  const std::string torch = format.torch ? torch_dump_pickle(snap, format.torch_backend) : "";
  // Written once, into the first folder; the others get hard links to those files (one file,
  // several names), or a copy where the file system cannot link.
  std::vector<std::pair<std::string, const std::string*>> files;
  if (format.json) files.emplace_back(fr_dump_file_name(rank), &json);
  if (format.torch) files.emplace_back(fmt::format("{}{}", format.torch_prefix, rank), &torch);
  for (size_t d = 0; d < dirs.size(); ++d) {
    std::error_code ec;
    std::filesystem::create_directories(dirs[d], ec);
    for (const auto& [name, bytes] : files) {
      const std::string path = (std::filesystem::path(dirs[d]) / name).string();
      const std::string first = (std::filesystem::path(dirs[0]) / name).string();
      add(d > 0 && link_file_atomic(first, path) ? path
                                                 : write_atomically(dirs[d], name, *bytes, rank));
    }
  }
  return paths;
}

FrDumpFormat FrDumpFormat::from_env(const Env& env) {
  FrDumpFormat f;
  if (auto v = env.get("COLLIE_FR_DUMP_FORMAT"); v && !v->empty()) {
    f.json = f.torch = false;
    std::string_view rest = *v;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string_view word = rest.substr(0, comma);
      if (word == "json") {
        f.json = true;
      } else if (word == "torch") {
        f.torch = true;
      } else {
        throw InvalidArgument(
            fmt::format("COLLIE_FR_DUMP_FORMAT {}: expected json, torch or json,torch", quote(*v)));
      }
      rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
    }
  }
  if (auto p = env.get("COLLIE_FR_DUMP_PREFIX"); p && !p->empty()) {
    if (p->find('/') != std::string::npos || std::isdigit(static_cast<unsigned char>(p->back()))) {
      throw InvalidArgument(fmt::format(
          "COLLIE_FR_DUMP_PREFIX {}: a file-name prefix without '/' that does not end in a "
          "digit (the rank follows it)",
          quote(*p)));
    }
    f.torch_prefix = *p;
  }
  // Every release of torch's fr_trace accepts "nccl:" (torch up to 2.11 accepts nothing else,
  // and torch's own recorder wrote "nccl:" for every backend then); "group" keeps each group's.
  f.torch_backend = env.get("COLLIE_FR_TORCH_BACKEND").value_or("nccl");
  if (f.torch_backend.empty()) f.torch_backend = "nccl";
  if (f.torch_backend == "group") f.torch_backend.clear();
  return f;
}

}  // namespace collie
