#pragma once
// `pairwise` probe: latency and bandwidth between hosts, scheduled by probes/isolate.h so a bad
// host or link is named only after it reproduced against known-good partners. A link is a pair
// of hosts (ranks stand in for hosts when every rank is on one host); each host is measured
// through its first rank. Schedules: "quick" (one survey round of disjoint pairs, then focused
// re-measurement; O(1) rounds whatever the size) and "full" (every pair of ranks, N - 1 rounds,
// then the same re-measurement). Rank 0 plans each round and publishes it through the store;
// every rank follows, so a broken data link still reports. The result is complete on rank 0.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "probes/context.h"
#include "probes/isolate.h"
#include "probes/link_matrix.h"

namespace collie::probes {

struct PairwiseOptions {
  int64_t bytes = 4 << 20;         // message size of the bandwidth test
  int bw_iters = 5;                // timed messages per direction (each one a noise sample)
  int lat_iters = 20;              // 8-byte round trips
  std::string schedule = "quick";  // quick | full
  int rotation = -1;               // quick: survey round; -1 = a new one every run (clock)
  int confirm = 2;                 // re-measurements that must reproduce before naming
  double slow_threshold = 0.25;    // relative: WARN from this far below the reference ...
  double crit_drop = 0.5;          // ... CRIT from this far
  double noise_k = 3;              // and only beyond noise_k x the measured noise
  double min_link_gbps = 0;        // absolute floor for every link (0 = none)
  double max_latency_us = 0;       // absolute latency ceiling (0 = none)
  // A link below this share of what its hosts can do (loopback, the interface's stated speed;
  // probes/verdict.h) is CRIT whatever the survey's reference says (0 = off: nothing measured).
  double capacity_fraction = 0.1;
  // A link whose slower direction is below this share of its reverse is bad (0 = off).
  double reverse_fraction = 0.1;
  // Per-host absolute limits from the spec's node-type profiles (host name -> value); they
  // replace min_link_gbps / max_latency_us for the hosts they name.
  std::map<std::string, double> host_floor_gbps, host_max_latency_us;
};

// The result lives on rank 0. Its memory is O(N + what was measured): the rank matrices are sparse
// (a quick survey of N hosts fills O(N) cells, a full one every pair), and the text and HTML show
// the matrix by host: every cell up to kHeatMapFullRows hosts, the worst hosts beyond.
struct PairwiseResult {
  int world = 0;
  std::vector<std::string> hosts;  // per rank
  int64_t bytes = 0;
  double slow_threshold = 0.25;
  RankMatrix bw_gbps;               // bw_gbps.at(i, j): i -> j, GB/s (first measurement)
  RankMatrix latency_us;            // one-way latency (half the median round trip), symmetric
  std::vector<std::string> errors;  // failed survey pairs, with the error
  std::vector<int> missing_ranks;
  std::vector<std::string> units;        // host names, or "rank N" when every rank is on one host
  std::vector<int> unit_rank;            // the rank that measures for each unit
  std::vector<int> unit_of;              // per rank: its unit
  std::vector<std::string> unit_labels;  // per unit: "hostB (ranks 2, 3)" / "rank 3"
  std::vector<HostCapacity> capacity;    // per unit, as its measuring rank reported it
  std::map<int, HostCapacity> rank_capacity;  // full survey: per rank, from the rows
  IsolationReport isolation;                  // schedule, rounds, reference, noise, named faults
  // Full survey: per-message samples of each directed rank pair (i, j), from the rows.
  std::map<std::pair<int, int>, std::vector<double>> survey_samples;
  std::map<std::pair<int, int>, double> survey_cpu_wait;  // the same pairs' LinkSample::cpu_wait
  double seconds = 0;                                     // wall time of the probe (rank 0)

  std::vector<Deviation> links() const { return link_deviations(bw_gbps, hosts); }
  std::vector<Deviation> host_scores() const { return host_deviations(bw_gbps, hosts); }
  // The matrix by unit (host): cell (u, v) is the median over the measured rank pairs from u to
  // v; same-unit pairs are left out. Sparse, as the rank matrix.
  RankMatrix unit_matrix(const RankMatrix& by_rank) const;
  // Confirmed faults only: hosts (HOST_*) and links (LINK_*), deviation = -effect.
  std::vector<Deviation> slow_hosts() const;
  std::vector<Deviation> slow_links() const;
  std::string unit_label(int unit) const;  // "hostB (ranks 2, 3)" / "rank 3"
  std::string finding_label(const IsolationFinding& f) const;
  Verdict verdict() const;  // the findings' worst; CRIT with errors or missing ranks
  nlohmann::json to_json() const;
  std::string to_text() const;
};

PairwiseResult run_pairwise(ProbeContext& ctx, const PairwiseOptions& opts = {});

// Builds the matrix from per-rank rows of a full survey (JSON arrays of {peer, ok, lat_us,
// bw_gbps, error, samples?}); exposed for tests. Call isolate_result() next.
PairwiseResult merge_pairwise(int world, const std::vector<std::string>& hosts,
                              const std::vector<std::optional<std::string>>& rows,
                              const PairwiseOptions& opts);

// Units from r.hosts, the survey from r's matrix (cross-unit rank pairs; each unit pair's
// samples are the per-message samples of its directed rank pairs), then isolate() with `remeasure`
// for the later rounds; fills r.units, r.unit_rank, r.unit_of, r.unit_labels and r.isolation.
// `survey_rounds`: the rounds the matrix took. An empty matrix (quick schedule) leaves the survey
// to the engine.
void isolate_result(PairwiseResult& r, const PairwiseOptions& o, const MeasureRound& remeasure,
                    int survey_rounds);

// The engine's options from the probe's (thresholds per unit from the per-host limits; `units`
// also name the units in the reasons).
IsolateOptions isolate_options(const PairwiseOptions& o, const std::vector<std::string>& units);

// A host's capacity in a row entry ("capacity": {loopback_gbps, line_gbps, iface}) and back.
nlohmann::json capacity_json(const HostCapacity& c);
HostCapacity capacity_from_json(const nlohmann::json& j);

}  // namespace collie::probes
