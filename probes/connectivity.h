#pragma once
// `connectivity` probe: every rank reaches every other rank by a p2p round trip over its own
// two-rank group, scheduled as tournament rounds (each rank computes its own peer per round:
// O(1) state per round, never the N^2 / 2 pairs). A pair that cannot connect or answer within
// the deadline is reported broken; results travel through the store, so ranks behind a broken
// link still report. Runs on every rank of ctx; the summary is complete on rank 0 only.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "probes/context.h"

namespace collie::probes {

struct ConnectivityOptions {
  int rounds = 1;      // repeat the whole tournament (a flapping link fails in some repeat)
  Millis interval{0};  // pause between repeats
  // Each rank lists, beside its failed pairs, the pairs whose round trip was above this (0 =
  // none): the max_rtt_us rule of `collie accept`. The others travel as a summary.
  double report_rtt_us = 0;
};

struct PairStatus {
  int a = -1, b = -1;  // a < b
  bool ok = false;
  double rtt_us = 0;  // best round trip when ok
  std::string error;  // first failure seen from either side
};

// One rank's view of one peer, as the rank measured it.
struct PeerResult {
  int peer = -1;
  bool ok = false;
  double rtt_us = -1;  // best round trip when ok
  std::string error;
};

// What a rank reports (JSON): its failed peers, the peers above report_rtt_us, and the round
// trips of the others as a summary, so a row is O(1 + failures) rather than O(N) and rank 0
// merges N rows in O(N + failures).
std::string connectivity_row(const std::vector<PeerResult>& peers, double report_rtt_us);

// Rank 0's result. Memory O(N + broken pairs): the healthy pairs are counted, not kept.
struct ConnectivityResult {
  int world = 0;
  std::vector<std::string> hosts;
  int64_t pair_count = 0;                // every pair a < b
  std::vector<PairStatus> broken_pairs;  // sorted by (a, b)
  // Reachable pairs whose best round trip was above ConnectivityOptions::report_rtt_us.
  std::vector<PairStatus> slow_pairs;
  // Round trips over the reachable pairs: the fastest, the median of the ranks' medians and
  // the slowest (with its pair); -1 when none was measured.
  double rtt_min_us = -1, rtt_median_us = -1, rtt_max_us = -1;
  int rtt_max_a = -1, rtt_max_b = -1;
  std::vector<int> missing_ranks;  // ranks that did not report in time
  const std::vector<PairStatus>& broken() const { return broken_pairs; }
  bool all_reachable() const { return broken_pairs.empty() && missing_ranks.empty(); }
  // Hosts every one of whose cross-host pairs is broken ("hostD (ranks 6, 7)").
  std::vector<std::string> isolated_hosts() const;
  nlohmann::json to_json() const;
  // The hosts that reach no other host and the broken pairs first (up to 64 one by one, by host
  // pair beyond), then the reachability matrix ('.' reachable, 'X' broken, '?' no report) up to
  // 64 ranks.
  std::string to_text() const;
};

ConnectivityResult run_connectivity(ProbeContext& ctx, const ConnectivityOptions& opts = {});

// Merges per-rank rows (connectivity_row) into the result: a pair is ok only when both ends saw
// it ok (an end that did not report does not count), and a pair between two ranks that did not
// report is broken. Exposed for tests.
ConnectivityResult merge_connectivity(int world, const std::vector<std::string>& hosts,
                                      const std::vector<std::optional<std::string>>& rows);

}  // namespace collie::probes
