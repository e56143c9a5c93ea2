#pragma once
// LiveSummary: the live status of a span of ranks as one small document whose size does not grow
// with the span: per group, the ranks bucketed by where they are (last completed collective, the
// collective in flight and its op), each bucket as rank ranges, host names and in-flight / idle
// ages; plus the ranks that did not answer, by why. A rank's own summary comes from its
// LiveStatus snapshot; the live-status tree (live_tree.h) merges its children's into its own and
// answers its parent with the result, so the root's summary covers the world. Verdicts are read
// from it by live_verdict.h.
// Sizes: at most kMaxSummaryGroups groups, kMaxBuckets buckets per group (the furthest-ahead
// positions are folded into one "mixed" bucket past that), kMaxBucketHosts hosts per bucket and
// RankRanges::kDefaultMaxRanges ranges per rank set; counts stay exact past every cap.
// Summaries from other ranks are untrusted: from_json checks every field and every range.
// Value types and pure functions; thread-safe to read.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/rank_ranges.h"
#include "metrics/live_status.h"

namespace collie {

inline constexpr size_t kMaxSummaryGroups = 4096;
inline constexpr size_t kMaxBuckets = 32;
inline constexpr size_t kMaxBucketHosts = 256;

// Ranks of one group at the same place.
struct LiveBucket {
  // The place (the key buckets are merged on).
  uint64_t last_completed = 0;  // last completed collective seq (0: none yet)
  uint64_t inflight_seq = 0;    // the oldest op in flight (0: idle)
  bool inflight_p2p = false;    // that op is a send/recv (its seq is the p2p seq)
  std::string inflight_op;      // "all_reduce"; "" when idle
  // Folded from several places (past kMaxBuckets): the key is the lowest of them.
  bool mixed = false;
  // What holds for them.
  std::string last_completed_op;  // of the first rank merged in; "" before any
  RankRanges ranks;
  std::vector<std::string> hosts;  // sorted, unique, at most kMaxBucketHosts
  bool hosts_truncated = false;
  double age_min_s = 0, age_max_s = 0;    // age of the op in flight (0 when idle)
  double idle_min_s = 0, idle_max_s = 0;  // since the rank's last start or completion

  // The furthest collective these ranks reached: the one in flight, else the last completed.
  uint64_t position() const {
    return inflight_seq != 0 && !inflight_p2p ? inflight_seq : last_completed;
  }
  bool idle() const { return inflight_seq == 0; }
};

struct LiveGroup {
  std::string pg;  // pg_id ("0" = world)
  std::string desc;
  int size = 0;                     // members, as the ranks report it
  std::vector<LiveBucket> buckets;  // sorted by (position, key)
};

// Ranks whose status is not in the summary, by why.
struct LiveMissing {
  // no_answer: asked, no whole answer by its deadline; error: asked, refused / failed /
  // answered something that is not its status; no_address: no debug-server address in the
  // store (never started one) or one that is not an address; not_reached: not asked (below a
  // rank that did not answer, or its address not read from the store yet).
  std::string kind;
  RankRanges ranks;
  std::string example;             // the reason of the first rank merged in (printable)
  std::vector<std::string> hosts;  // from their addresses when not loopback; sorted, capped
  bool hosts_truncated = false;
};

struct LiveSummary {
  int lo = 0, hi = 0;  // covers ranks [lo, hi)
  int world_size = 0;
  RankRanges answered;
  std::vector<LiveMissing> missing;  // one per kind, in kind order
  std::vector<LiveGroup> groups;     // sorted by pg
  int64_t groups_omitted = 0;        // groups past kMaxSummaryGroups (their ranks answered)
  int64_t requests = 0;              // status requests sent inside this span's tree
  int levels = 1;                    // levels of the tree that answered (1: this rank alone)

  int64_t accounted() const;  // answered + missing: every rank of the span once when whole
};

// One rank's summary: its groups from a LiveStatus snapshot. `host`: its host name.
LiveSummary local_summary(int rank, int world_size, const std::string& host,
                          const std::vector<LiveStatus::GroupSnapshot>& groups);
// An empty summary of [lo, hi) (nothing answered yet).
LiveSummary empty_summary(int lo, int hi, int world_size);

// Adds `part` (a disjoint span's summary) into `into`, extending into's span to cover it.
void merge_summary(LiveSummary& into, const LiveSummary& part);
// Adds ranks [first, last] as missing for `why`. `host`: the host of their address ("" unknown).
void add_missing(LiveSummary& s, const std::string& kind, int first, int last,
                 const std::string& why, const std::string& host = "");

nlohmann::json summary_json(const LiveSummary& s);
// The summary of ranks [lo, hi) from another rank's answer: every field checked (types, ranges
// within [lo, hi), counts, each rank of the span exactly once, world size). False and *why when
// it is not one.
bool summary_from_json(const nlohmann::json& j, int lo, int hi, int world_size, LiveSummary* out,
                       std::string* why);

}  // namespace collie
