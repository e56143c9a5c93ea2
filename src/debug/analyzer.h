#pragma once
// Hang analyzer: reads the flight-recorder dumps of all ranks and explains, per group, what went
// wrong: collectives not every rank joined (and where the missing ranks are), mismatched op type
// / sizes / dtype / root with the culprit ranks, unmatched send/recv, and missing evidence (a
// rank's dump absent, or its ring wrapped).
// A library on in-memory dumps, so the CLI (files) and the debug server (live ranks: the same
// dumps fetched from /v1/flight_recorder) share one analysis. Live data adds only what a running
// job has and files do not: ranks whose server did not answer, and the age of ops still in
// flight, which separates a hang from a snapshot that caught ranks a few microseconds apart.
// At any N: dumps are folded one at a time (DumpFold) into a compact summary per collective
// (group, seq) and per rank in each group, and dropped; the checks scan that summary in seq
// order and never compare ranks pairwise. Sets of ranks are named as ranges and their hosts as a
// Slurm hostlist ("ranks 4100-4131 on hosts node[517-520]"), in the text and in the JSON.
// Thread safety: pure functions; a DumpFold is used by one thread at a time.
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "debug/rank_ranges.h"

namespace collie {

struct DumpEntry {
  uint64_t record_id = 0;
  std::string pg_id;
  uint64_t collective_seq_id = 0;
  uint64_t p2p_seq_id = 0;
  std::string profiling_name;  // "gloo:all_reduce"
  std::string op;              // "all_reduce" (from profiling_name)
  std::string sizes;           // input_sizes as JSON text, "[[1024]]"
  std::string dtypes;          // input_dtypes as JSON text
  std::string output_sizes;    // output_sizes as JSON text ("[]" when not recorded)
  std::string output_dtypes;   // output_dtypes as JSON text
  std::string reduce_op;       // "sum", ... (collie's dumps); "" when not recorded
  double duration_ms = -1;     // completed ops with timing; -1 when not recorded
  std::string state;           // scheduled | started | completed
  bool failed = false;
  bool is_p2p = false;
  int root = -1;
  int peer = -1;
  int64_t time_created_ns = 0;    // wall clock of the dumping rank (0 = unknown)
  int64_t time_started_ns = 0;    // 0 = not started, or unknown
  int64_t time_completed_ns = 0;  // 0 = not completed, or unknown
};

struct RankDump {
  int rank = -1;
  int world_size = 0;
  bool wrapped = false;
  uint64_t buffer_size = 0;
  uint64_t total_recorded = 0;
  std::string reason;
  std::string trigger;       // "request" | "failure" | "" (unknown: older or PyTorch dumps)
  std::string host;          // "hostname" of the dump; "" when unknown (older or PyTorch dumps)
  int64_t dump_time_ns = 0;  // wall clock of the dumping rank; 0 = unknown (ages unknown)
  struct Group {
    std::string desc;
    std::vector<int> ranks;
    uint64_t last_enqueued = 0, last_started = 0, last_completed = 0;
  };
  std::map<std::string, Group> groups;
  std::vector<DumpEntry> entries;  // oldest first
};

// The most ranks a dump may name (world_size, ranks, peers); larger is rejected as malformed.
inline constexpr int kMaxAnalyzeWorld = 1000000;

// Parses one dump (FlightRecorder::dump_json). Dumps are untrusted input: throws InvalidArgument
// (one line) on malformed JSON, a key given twice, nesting deeper than 16, a negative or
// non-integer seq id, a rank outside 0..kMaxAnalyzeWorld-1 (or not below world_size), an entry
// of a group absent from pg_config. Every string kept is printable (core/printable.h). Time and
// memory grow with the input's size, never with a number inside it; debug/dump_parse.h states
// the memory per byte and the file size limits.
RankDump parse_dump(const std::string& json_text);
// The same, streamed from a file (the file's text is never held whole).
RankDump parse_dump_file(const std::string& path);
// Reads every collie_fr_rank_*.json in dir, and every file that is a pickle (first byte 0x80,
// PyTorch's dump layout, torch_dump.h) with its rank at the end of its name; a rank with both
// keeps collie's. Only regular files are read (a FIFO or device planted under a dump's name is
// refused without blocking) and none larger than its format's limit. Unreadable or malformed
// files, and a second file for a rank that already has one, are reported in `errors` and
// skipped.
std::vector<RankDump> load_dump_dir(const std::string& dir, std::vector<std::string>& errors);

struct Finding {
  std::string pg_id{};
  std::string kind{};  // NOT_ALL_JOINED, COLLECTIVE_TYPE_MISMATCH, SIZE_MISMATCH, DTYPE_MISMATCH,
                       // ROOT_MISMATCH, UNMATCHED_P2P, P2P_MISMATCH, MISSING_DUMP, UNREACHABLE,
                       // RING_WRAPPED, STUCK, WORLD_SIZE_MISMATCH
  std::vector<int> culprits{};  // world ranks, sorted; empty for informational findings
  std::vector<int> ranks{};     // world ranks the finding is about (culprits included), sorted
  uint64_t seq = 0;
  std::string message{};  // names sets of ranks as ranges, never one line per rank
  // What the message says, as data, for the typed verdicts (src/diagnose); not in to_json.
  // NOT_ALL_JOINED: op, joined (ranks), waited_s (-1 unknown), idle: [{ranks, group, op, seq,
  //   idle_s}] (the ranks blamed: nothing in flight, their newest op), blocked_here (ranks),
  //   elsewhere: [{ranks, group, op, seq, state}], moving (ranks); or, for late arrivals,
  //   late (ranks), by_s, gave_up (ranks).
  // *_MISMATCH: field, expected, found, expected_ranks, found_ranks.
  // P2P_MISMATCH / UNMATCHED_P2P: field ("sizes" | "peer"), from, to.
  // STUCK: op, state, min_age_s, max_age_s (-1 unknown), all_joined (every member of the group
  //   recorded this seq, and every rank of the group left a dump: stuck inside the collective, not
  //   waiting for a rank), members_without_dump.
  nlohmann::json facts{};
};

// A rank whose debug server did not answer the fan-out (live analysis only).
struct UnreachableRank {
  int rank = 0;
  std::string why;  // "connection refused (http://...)", "no address in the store", ...
};

struct AnalyzeOptions {
  int expected_world = -1;  // < 0: take it from the dumps
  // Dumps taken from running ranks: every rank without a dump is in `unreachable` and rings
  // that wrapped are normal.
  bool live = false;
  std::vector<UnreachableRank> unreachable;
  // An op counts as a problem only once it has been in flight this long when its rank dumped
  // (a collective not every rank joined, an unmatched send/recv, a stuck op), and a rank that
  // did not join counts as the culprit only when it had done nothing for this long before its
  // dump (a rank that is behind but still moving is not to blame). Ages are differences of one
  // rank's own times, monotonic in collie's dumps. < 0: automatic, kAutoStall*.
  double stall_after_s = -1;
};

// The automatic stall_after_s: dumps of a running job (live, or every dump file "request") may
// catch ranks microseconds apart, so ops must be this old; dumps written on a failure (or of
// unknown trigger) were written after the job had gone wrong: every op in flight counts.
inline constexpr double kAutoStallLiveS = 10;
inline constexpr double kAutoStallRequestedS = 1;

// Per-rank verdict derived from the findings, worst first:
// unreachable > culprit (mismatch, unmatched p2p) > straggler (did not join) > stalled
// (in an op for stall_after_s) > ok.
struct RankVerdict {
  int rank = 0;
  std::string state;  // ok | stalled | straggler | culprit | unreachable
  std::vector<std::string> reasons;
};

struct Analysis {
  int world_size = 0;
  bool live = false;
  double stall_after_s = 0;  // the threshold used (after resolving "automatic")
  // When the ranks' dumps were taken: the first and the last (wall clocks; -1 when < 2 known).
  double dump_spread_ms = -1;
  int first_dump_rank = -1, last_dump_rank = -1;
  // Facts the findings rest on (how far apart the dumps are, the threshold, clock trouble).
  std::vector<std::string> notes;
  std::vector<int> ranks_with_dumps;
  std::vector<UnreachableRank> unreachable;
  std::vector<Finding> findings;
  // Who arrived last at each collective (entry times of the ranks that recorded it, each rank's
  // own wall clock), over every collective at least two ranks recorded: per rank that was last
  // at least once, how often and by how much after the one before it.
  struct LastArrivals {
    int rank = 0;
    size_t last = 0;  // collectives it arrived last at
    size_t ops = 0;   // collectives it recorded that at least two ranks recorded
    double median_margin_ms = 0, max_margin_ms = 0;
  };
  std::vector<LastArrivals> last_arrivals;  // most often last first
  // The host each rank's dump named: host_names[rank_host[r]], -1 (or r past the end) unknown.
  std::vector<std::string> host_names;
  std::vector<int32_t> rank_host;
  std::vector<int> culprits() const;          // union over findings, sorted
  std::vector<RankVerdict> verdicts() const;  // one per rank in [0, world_size); O(N) strings
  // Each state but "ok" with its ranks (sorted), worst first; what verdicts() says, without a
  // copy of the reasons per rank.
  std::vector<std::pair<std::string, std::vector<int>>> states() const;
  std::string summary() const;          // one line: "no problem found" / "culprit rank 2 (...)"
  std::string host_of(int rank) const;  // "" when unknown
  // The hosts of `ranks` as a Slurm hostlist ("node[517-520]"); "" when none is known.
  std::string hosts_of(const std::vector<int>& ranks) const;
};

// How the reports name counts and sets of ranks (text): "16,352"; "rank 2" / "ranks 0-3, 5"
// (a list cut after about 200 characters ends "... (8,192 ranks)"); the same with the hosts the
// dumps named, " on host node7" / " on hosts node[517-520]".
std::string count_text(size_t n);
std::string rank_word(const std::vector<int>& sorted_ranks);
std::string who_text(const Analysis& a, const std::vector<int>& sorted_ranks);

// Folds dumps into the analyzer's summary one at a time, so the dumps need not be held
// together: per collective (group, seq) the distinct (op, sizes, dtypes, root) with the ranks
// that called each, the oldest ages, the failed entries and the latest arrivals
// (kKeptArrivals); per rank and group where it is (last seq, oldest op in flight) and its
// send/recv in order; per rank its dump's facts. Memory: O(distinct ops + ranks + p2p entries),
// not O(sum of the dumps' entries) — a dump of a job where every rank agrees adds no memory per
// entry. Ranks are best added in ascending order (a set of ranks is then one range).
// Not thread-safe: one thread adds.
class DumpFold {
 public:
  DumpFold();
  ~DumpFold();
  DumpFold(const DumpFold&) = delete;
  DumpFold& operator=(const DumpFold&) = delete;
  // Adds one rank's dump (which the caller may drop afterwards). A second dump of a rank already
  // added is ignored: returns false.
  bool add(const RankDump& d);
  bool has(int rank) const;
  size_t size() const;  // dumps added
  // Collectives (group, seq) the fold holds: those no check can find anything in yet (every rank
  // of the group recorded them, completed and alike) are already reduced to who arrived last.
  size_t collectives_held() const;
  // The analysis of every dump added. Precondition: options.expected_world <= kMaxAnalyzeWorld;
  // unreachable ranks in [0, that). The fold is left empty.
  Analysis analyze(const AnalyzeOptions& options);

  struct State;  // analyzer_fold.h

 private:
  std::unique_ptr<State> s_;
};

// Late arrivals (a rank reaching a collective after others had failed it) are judged among
// each collective's failed entries and this many latest-created entries.
inline constexpr size_t kKeptArrivals = 64;

// What load_dump_dir reads, folded into `fold` dump by dump in ascending rank order, parsed on
// `threads` threads (0: one per core, at most 8) while the caller's thread folds; no more than a
// few dumps per thread are held at once. Errors as load_dump_dir's.
void fold_dump_dir(const std::string& dir, DumpFold& fold, std::vector<std::string>& errors,
                   int threads = 0);

// Time and memory are bounded by the dumps' sizes (entries, groups) and the world size, which
// parse_dump caps at kMaxAnalyzeWorld; seq ids are only compared, never counted through.
// Precondition: options.expected_world <= kMaxAnalyzeWorld; unreachable ranks in [0, that).
Analysis analyze(const std::vector<RankDump>& dumps, const AnalyzeOptions& options);
// expected_world < 0: take it from the dumps.
Analysis analyze(const std::vector<RankDump>& dumps, int expected_world = -1);
std::string to_text(const Analysis& a);
// {schema: "collie.analyze.v2", world_size, live, stall_after_s, dump_spread_ms, notes,
//  ranks_with_dumps: "0-3", dumps: n, unreachable: [{ranks, why}], culprits: "2",
//  culprit_hosts, summary, findings: [{pg_id, kind, culprits, ranks, hosts, rank_count, seq,
//  message}], states: [{state, ranks, count, hosts}]}; every set of ranks is a rank_ranges
//  string, every set of hosts a Slurm hostlist (docs/hang-diagnosis.md).
nlohmann::json to_json_value(const Analysis& a);
std::string to_json(const Analysis& a);  // to_json_value(a).dump(2)

}  // namespace collie
