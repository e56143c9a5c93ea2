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

// Thread identity is cached per thread so the hot path makes no system call.
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

void fill_sizes(FrEntry::Sizes& s, const TensorView& t, bool present) {
  s.present = present;
  if (!present) return;
  s.dtype = t.dtype;
  Shape sh = t.effective_shape();
  s.ndim = sh.ndim;
  s.dims = sh.dims;
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

// A ring slot: a seqlock over the entry kept as atomic words. The version is odd while a writer
// holds the slot; readers copy the words and retry when the version moved.
struct FlightRecorder::Slot {
  static_assert(std::is_trivially_copyable_v<FrEntry> && sizeof(FrEntry) % 8 == 0);
  static constexpr size_t kWords = sizeof(FrEntry) / 8;
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
  // Words [first, end) of the entry into / out of `e` (the same bytes of an FrEntry).
  void load(FrEntry& e, size_t first = 0, size_t end = kWords) const {
    char* bytes = reinterpret_cast<char*>(&e);
    for (size_t i = first; i < end; ++i) {
      const uint64_t w = words[i].load(std::memory_order_relaxed);
      std::memcpy(bytes + i * 8, &w, 8);
    }
  }
  void store(const FrEntry& e, size_t first = 0, size_t end = kWords) {
    const char* bytes = reinterpret_cast<const char*>(&e);
    for (size_t i = first; i < end; ++i) {
      uint64_t w;
      std::memcpy(&w, bytes + i * 8, 8);
      words[i].store(w, std::memory_order_relaxed);
    }
  }
  uint64_t record_id() const { return words[0].load(std::memory_order_relaxed); }
  // A consistent copy, retried while a writer holds the slot. A slot whose writer never lets go
  // (it crashed there, and this is the crash dump) reads as empty (record_id 0).
  FrEntry read() const {
    FrEntry e;
    for (int tries = 0; tries < 100000; ++tries) {
      const uint64_t v = version.load(std::memory_order_acquire);
      if ((v & 1) == 0) {
        load(e);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (version.load(std::memory_order_relaxed) == v) return e;
      }
      if (tries > 16) std::this_thread::yield();
    }
    e.record_id = 0;
    return e;
  }
};
static_assert(offsetof(FrEntry, record_id) == 0);

void FlightRecorder::SlotDeleter::operator()(Slot* s) const { delete[] s; }

FlightRecorder::FlightRecorder(size_t capacity, Clock* clock)
    : slots_(capacity ? new Slot[capacity] : nullptr),
      capacity_(capacity),
      clock_(clock ? clock : &Clock::system()) {}

size_t FlightRecorder::capacity_from_env(const Env& env) {
  const auto v =
      env.get_int_in("COLLIE_FR_BUFFER_SIZE", 0, static_cast<long long>(kMaxCapacity),
                     fmt::format(" (ops the flight recorder keeps, {} bytes each; 0 turns it off)",
                                 sizeof(FrEntry)));
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
          n * sizeof(FrEntry)));
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
  FrEntry e;
  e.group = &g;
  e.op = call.type;
  e.is_p2p = is_p2p(call.type);
  (e.is_p2p ? e.p2p_seq_id : e.collective_seq_id) = call.seq;
  e.op_id = op_id;
  e.time_created_ns = now;
  const bool has_in = call.input.data != nullptr || call.input.numel > 0;
  const bool has_out = call.output.data != nullptr || call.output.numel > 0;
  fill_sizes(e.input, call.input, has_in);
  fill_sizes(e.output, call.output, has_out);
  e.timeout_ms = call.timeout.count();
  e.root = has_root(call.type) ? global(call.root) : -1;
  e.peer = e.is_p2p ? global(call.peer) : -1;
  e.has_reduce_op = has_reduce_op(call.type);
  e.reduce_op = call.reduce_op;
  e.thread_id = self.id;
  std::memcpy(e.thread_name, self.name, sizeof(e.thread_name));
  const std::string_view op = op_name(call.type);
  if (call.type == OpType::Send) {
    fmt::format_to_n(e.profiling_name, FrEntry::kNameLen - 1, "{}:{} {}->{}", g.backend, op,
                     g.global_rank, e.peer);
  } else if (call.type == OpType::Recv) {
    fmt::format_to_n(e.profiling_name, FrEntry::kNameLen - 1, "{}:{} {}<-{}", g.backend, op,
                     g.global_rank, e.peer);
  } else {
    // "<backend>:<op>" without fmt: this is every collective's hot path.
    char* p = e.profiling_name;
    char* const end = e.profiling_name + FrEntry::kNameLen - 1;
    for (std::string_view part : {std::string_view(g.backend), std::string_view(":"), op}) {
      const size_t n = std::min(part.size(), static_cast<size_t>(end - p));
      std::memcpy(p, part.data(), n);
      p += n;
    }
  }
  e.record_id = next_id_.fetch_add(1, std::memory_order_relaxed);
  Slot& s = slots_[(e.record_id - 1) % capacity_];
  const uint64_t v = s.lock();
  // A thread that took a later id for this slot (the ring wrapped meanwhile) keeps it.
  if (s.record_id() < e.record_id) s.store(e);
  s.unlock(v);
  return e.record_id;
}

namespace {
// What a mark rewrites: FrEntry's time_discovered_started_ns through failed, in the same layout,
// so a mark copies three words instead of building a whole entry.
struct FrMarks {
  int64_t time_discovered_started_ns;
  int64_t time_discovered_completed_ns;
  FrState state;
  bool retired;
  bool failed;
};
constexpr size_t kMarkOffset = offsetof(FrEntry, time_discovered_started_ns);
static_assert(kMarkOffset % 8 == 0 && sizeof(FrMarks) % 8 == 0);
static_assert(offsetof(FrEntry, time_discovered_completed_ns) - kMarkOffset ==
                  offsetof(FrMarks, time_discovered_completed_ns) &&
              offsetof(FrEntry, state) - kMarkOffset == offsetof(FrMarks, state) &&
              offsetof(FrEntry, retired) - kMarkOffset == offsetof(FrMarks, retired) &&
              offsetof(FrEntry, failed) - kMarkOffset == offsetof(FrMarks, failed));
constexpr size_t kMarkFirst = kMarkOffset / 8;
constexpr size_t kMarkWords = sizeof(FrMarks) / 8;
}  // namespace

template <typename F>
void FlightRecorder::mark(uint64_t id, F&& fn) {
  if (id == 0 || capacity_ == 0) return;
  Slot& s = slots_[(id - 1) % capacity_];
  const uint64_t v = s.lock();
  if (s.record_id() == id) {
    uint64_t w[kMarkWords];
    for (size_t i = 0; i < kMarkWords; ++i)
      w[i] = s.words[kMarkFirst + i].load(std::memory_order_relaxed);
    FrMarks m;
    std::memcpy(&m, w, sizeof(m));
    fn(m);
    std::memcpy(w, &m, sizeof(m));
    for (size_t i = 0; i < kMarkWords; ++i)
      s.words[kMarkFirst + i].store(w[i], std::memory_order_relaxed);
  }
  s.unlock(v);
}

void FlightRecorder::mark_started(uint64_t id) {
  if (id == 0) return;
  const int64_t now = clock_->mono_ns();
  mark(id, [&](FrMarks& e) {
    if (e.state != FrState::Scheduled) return;
    e.state = FrState::Started;
    e.time_discovered_started_ns = now;
  });
}

void FlightRecorder::mark_completed(uint64_t id, bool failed, int64_t now_ns) {
  if (id == 0) return;
  const int64_t now = now_ns != 0 ? now_ns : clock_->mono_ns();
  mark(id, [&](FrMarks& e) {
    if (e.time_discovered_started_ns == 0) e.time_discovered_started_ns = now;
    e.state = FrState::Completed;
    e.time_discovered_completed_ns = now;
    e.retired = true;
    e.failed = failed;
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
  f.torch_backend = env.get("COLLIE_FR_TORCH_BACKEND").value_or("");
  return f;
}

}  // namespace collie
