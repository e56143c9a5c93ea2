#pragma once
// `pairwise` probe: latency and bandwidth of every pair of ranks, measured on a two-rank group
// per pair, one tournament round at a time (pairs of a round run at the same time and share no
// rank). Bandwidth is per direction (i -> j). Slow links and hosts are named by their deviation
// from the median of cross-host links. Runs on every rank; the result is complete on rank 0.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "probes/context.h"
#include "probes/stats.h"

namespace collie::probes {

struct PairwiseOptions {
  int64_t bytes = 4 << 20;  // message size of the bandwidth test
  int bw_iters = 5;
  int lat_iters = 20;            // 8-byte round trips
  double slow_threshold = 0.25;  // a link/host 25 % below the median is named slow
};

struct PairwiseResult {
  int world = 0;
  std::vector<std::string> hosts;
  int64_t bytes = 0;
  double slow_threshold = 0.25;
  RankMatrix bw_gbps;               // bw_gbps.at(i, j): i -> j, GB/s (1e9 bytes/s)
  RankMatrix latency_us;            // one-way latency (half the median round trip), symmetric
  std::vector<std::string> errors;  // failed pairs, with the error
  std::vector<int> missing_ranks;
  std::vector<Deviation> links() const { return link_deviations(bw_gbps, hosts); }
  std::vector<Deviation> host_scores() const { return host_deviations(bw_gbps, hosts); }
  // Links / hosts at least slow_threshold below the median.
  std::vector<Deviation> slow_links() const;
  std::vector<Deviation> slow_hosts() const;
  nlohmann::json to_json() const;
  std::string to_text() const;
};

PairwiseResult run_pairwise(ProbeContext& ctx, const PairwiseOptions& opts = {});

// Builds the result from per-rank rows (JSON arrays of {peer, ok, lat_us, bw_gbps, error});
// exposed for tests.
PairwiseResult merge_pairwise(int world, const std::vector<std::string>& hosts,
                              const std::vector<std::optional<std::string>>& rows,
                              const PairwiseOptions& opts);

}  // namespace collie::probes
