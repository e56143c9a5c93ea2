#pragma once
// `connectivity` probe: every rank reaches every other rank by a p2p round trip over its own
// two-rank group, scheduled as tournament rounds. A pair that cannot connect or answer within
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
};

struct PairStatus {
  int a = -1, b = -1;  // a < b
  bool ok = false;
  double rtt_us = 0;  // best round trip when ok
  std::string error;  // first failure seen from either side
};

struct ConnectivityResult {
  int world = 0;
  std::vector<std::string> hosts;
  std::vector<PairStatus> pairs;   // every pair a < b
  std::vector<int> missing_ranks;  // ranks that did not report in time
  std::vector<PairStatus> broken() const;
  bool all_reachable() const { return broken().empty() && missing_ranks.empty(); }
  // Hosts every one of whose cross-host pairs is broken ("hostD (ranks 6, 7)").
  std::vector<std::string> isolated_hosts() const;
  nlohmann::json to_json() const;
  // Reachability matrix ('.' reachable, 'X' broken, '?' no report) and the broken pairs.
  std::string to_text() const;
};

ConnectivityResult run_connectivity(ProbeContext& ctx, const ConnectivityOptions& opts = {});

// Merges per-rank views (rank r's list of {peer, ok, rtt, error}) into pair statuses: a pair is
// ok only when both ends saw it ok. Exposed for tests.
ConnectivityResult merge_connectivity(int world, const std::vector<std::string>& hosts,
                                      const std::vector<std::optional<std::string>>& rows);

}  // namespace collie::probes
