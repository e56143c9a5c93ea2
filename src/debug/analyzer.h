#pragma once
// Hang analyzer: reads the flight-recorder dumps of all ranks and explains, per group, what went
// wrong: collectives not every rank joined (and what the missing ranks last completed),
// mismatched op type / sizes / dtype / root with the culprit rank, unmatched send/recv, and
// missing evidence (a rank's dump absent, or its ring wrapped).
// A library on in-memory dumps, so the CLI (files) and the debug server (live ranks) share it.
// Thread safety: pure functions.
#include <map>
#include <optional>
#include <string>
#include <vector>

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
  std::string state;           // scheduled | started | completed
  bool failed = false;
  bool is_p2p = false;
  int root = -1;
  int peer = -1;
};

struct RankDump {
  int rank = -1;
  int world_size = 0;
  bool wrapped = false;
  uint64_t buffer_size = 0;
  uint64_t total_recorded = 0;
  std::string reason;
  struct Group {
    std::string desc;
    std::vector<int> ranks;
    uint64_t last_enqueued = 0, last_started = 0, last_completed = 0;
  };
  std::map<std::string, Group> groups;
  std::vector<DumpEntry> entries;  // oldest first
};

// Parses one dump (FlightRecorder::dump_json). Throws InvalidArgument on malformed input.
RankDump parse_dump(const std::string& json_text);
// Reads every collie_fr_rank_*.json in dir; unreadable files are reported in `errors`.
std::vector<RankDump> load_dump_dir(const std::string& dir, std::vector<std::string>& errors);

struct Finding {
  std::string pg_id;
  std::string kind;  // NOT_ALL_JOINED, COLLECTIVE_TYPE_MISMATCH, SIZE_MISMATCH, DTYPE_MISMATCH,
                     // ROOT_MISMATCH, UNMATCHED_P2P, P2P_MISMATCH, MISSING_DUMP, RING_WRAPPED,
                     // STUCK
  std::vector<int> culprits;  // world ranks; empty for informational findings
  uint64_t seq = 0;
  std::string message;
};

struct Analysis {
  int world_size = 0;
  std::vector<int> ranks_with_dumps;
  std::vector<Finding> findings;
  std::vector<int> culprits() const;  // union over findings, sorted
};

// expected_world < 0: take it from the dumps.
Analysis analyze(const std::vector<RankDump>& dumps, int expected_world = -1);
std::string to_text(const Analysis& a);
std::string to_json(const Analysis& a);

}  // namespace collie
