#pragma once
// The analyzer's summary of the dumps (DumpFold::State): what the checks need of every dump,
// kept once per collective (group, seq) and once per rank in each group, so that memory follows
// the distinct ops and the ranks rather than the sum of the dumps' entries; a collective every
// rank of its group recorded, completed and alike, is retired as soon as it is (State::retired)
// and only what is still open stays. Filled by
// analyzer_fold.cpp (DumpFold::add), read by the checks (analyzer.cpp) and the reports
// (analyzer_report.cpp). Internal to src/debug.
// Thread safety: none; one thread owns a State.
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "debug/analyzer.h"

namespace collie::fold {

// Strings every entry repeats (op names, sizes, dtypes, states, hosts), kept once; id 0 is "".
class Interner {
 public:
  Interner() { id(""); }
  uint32_t id(const std::string& s) {
    auto [it, fresh] = ids_.try_emplace(s, static_cast<uint32_t>(strs_.size()));
    if (fresh) strs_.push_back(&it->first);
    return it->second;
  }
  const std::string& str(uint32_t id) const { return *strs_[id]; }

 private:
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<const std::string*> strs_;  // the map's keys, which never move
};

// A set of ranks as sorted, disjoint runs: "every rank" is one run. Adding ranks in ascending
// order is O(1) each; out of order it is O(runs).
class RankRuns {
 public:
  void add(int r);
  size_t count() const { return count_; }
  int lowest() const { return runs_.empty() ? -1 : runs_.front().first; }
  std::vector<int> ranks() const;
  void append_to(std::vector<int>& out) const;
  const std::vector<std::pair<int, int>>& runs() const { return runs_; }

 private:
  std::vector<std::pair<int, int>> runs_;  // [lo, hi]
  size_t count_ = 0;
};

constexpr double kUnknownAge = std::numeric_limits<double>::infinity();

// One collective (group, seq) over every rank that recorded it.
struct SeqAgg {
  struct Variant {
    uint32_t op = 0, sizes = 0, dtypes = 0;
    int root = -1;
    RankRuns ranks{};
  };
  struct Arrival {
    int rank = 0;
    int64_t created = 0, completed = 0;
  };
  std::vector<Variant> variants;  // one per distinct (op, sizes, dtypes, root); usually one
  double max_age = -1;            // the oldest entry's age at its rank's dump (kUnknownAge)
  double max_open_age = 0;        // the same among entries not completed
  int64_t first_created = 0;      // the earliest known creation time, 0 = none
  std::vector<Arrival> failed;    // entries that failed, with their times
  std::vector<Arrival> latest;    // min-heap by created: the kKeptArrivals latest arrivals
  bool open = false;              // some entry not completed, or failed
  size_t count() const;
  // The variant holding the lowest rank (whose op names the collective in messages).
  const Variant& first() const;
};

// One send or recv of a rank, in the order it issued them.
struct P2p {
  int peer = -1;
  bool send = false;
  uint32_t sizes = 0, dtypes = 0, state = 0;
  double age = kUnknownAge;
};

// One rank in one group.
struct Member {
  int rank = 0;
  bool wrapped = false;
  uint64_t last_completed = 0;  // pg_status
  bool has_coll = false;        // recorded any collective of the group
  uint64_t last_seq = 0;        // its highest recorded seq, and that entry's op and state
  uint32_t last_op = 0, last_state = 0;
  bool has_open = false;  // its oldest collective not completed
  uint64_t open_seq = 0;
  uint32_t open_op = 0, open_state = 0;
  double open_age = kUnknownAge;
  std::vector<P2p> p2p{};
};

struct GroupAgg {
  std::string pg_id, desc;
  size_t size = 0;                  // ranks in the group (pg_config of the first dump naming it)
  std::map<uint64_t, SeqAgg> seqs;  // collectives by seq
  std::vector<Member> members;      // ranks whose dump names the group; sorted by analyze
  const Member* member(int rank) const;  // after sorting; nullptr when absent
};

// One rank's dump, without its entries.
struct RankInfo {
  int rank = 0;
  int world_size = 0;
  bool wrapped = false;
  bool requested = false;  // trigger "request"
  uint64_t buffer_size = 0, total_recorded = 0;
  int64_t dump_time_ns = 0;
  double idle_s = kUnknownAge;  // since its last recorded activity, at its dump
  size_t stepped = 0;           // entries created after the dump time (a clock that stepped)
  int64_t stepped_by_ns = 0;
  int32_t host = -1;  // index into State::hosts
  // Busy in a collective: an op still in flight (the oldest one), or its newest op failed (it
  // gave up waiting there). A rank that is busy is blocked, never "idle outside collectives".
  bool busy = false;
  uint32_t busy_group = 0, busy_op = 0, busy_state = 0;  // strings
  uint64_t busy_seq = 0;
  // Its newest op (the ring's last entry): what a rank idle outside collectives last did.
  uint32_t newest_group = 0, newest_op = 0;  // strings; 0 ("") when it recorded none
  uint64_t newest_seq = 0;
};

// Who arrived last at each collective (SeqAgg::latest), and which ranks were in it: kept for
// the collectives the fold retires (State::retired) and summed with the rest by the analysis.
struct LastArrivals {
  struct Last {
    size_t count = 0;
    std::vector<double> margins_ms;  // over the second latest arrival, one per collective
  };
  std::map<int, Last> by_rank;
  std::map<std::pair<int, int>, int64_t> runs;  // ranks [lo, hi] -> collectives they were in
  // Adds collective `agg` (two or more arrivals; otherwise nothing).
  void add(const SeqAgg& agg);
};

}  // namespace collie::fold

namespace collie {

struct DumpFold::State {
  fold::Interner strings;
  uint32_t completed = strings.id("completed");
  std::map<std::string, fold::GroupAgg> groups;  // by pg_id
  std::vector<fold::RankInfo> ranks;             // in the order added
  std::vector<bool> seen;                        // by rank
  std::vector<std::string> hosts;
  std::unordered_map<std::string, int32_t> host_ids;
  // Collectives that every rank of their group recorded, completed and alike: no check can
  // find anything in them, so the fold keeps only who arrived last and drops them (memory
  // follows the collectives still open, not every op of every ring).
  fold::LastArrivals retired;
};

}  // namespace collie
