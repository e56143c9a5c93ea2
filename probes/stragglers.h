#pragma once
// `stragglers` probe: repeated collectives over the world group; each rank records, per
// iteration, when it arrived (submitted) and how long it then waited for the collective to
// finish. The last rank to arrive waits least, so a rank's lateness in an iteration is
// (longest wait of any rank) - (its wait): local durations only, no clock sync across hosts
// (the statistics and the naming rule are reports/arrival.h's, which collie perf -I uses too). Runs
// on every rank; the result is on rank 0.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "probes/context.h"

namespace collie::probes {

struct StragglerOptions {
  int iters = 50;
  int warmup = 5;
  int64_t bytes = 4096;       // all_reduce payload
  int64_t work_per_iter = 0;  // fixed CPU work units before each collective (0 = none)
  // A rank is named when its median lateness is at least this and at least 3x the median of the
  // other ranks' (reports/arrival.h), so load noise shared by every rank is not blamed on one.
  double late_us = 500;
  // Test seam: called on every rank before each iteration's work (e.g. to delay one rank).
  std::function<void(int rank, int iter)> before_iteration;
};

struct RankLateness {
  int rank = 0;
  std::string host;
  double median_late_us = 0;
  double p95_late_us = 0;
  double last_fraction = 0;   // share of iterations in which this rank arrived last
  double median_wait_us = 0;  // time spent inside the collective
};

struct StragglerResult {
  int world = 0;
  int iters = 0;
  double late_us = 500;
  std::vector<RankLateness> ranks;
  double median_skew_us = 0;  // per iteration: latest minus earliest arrival; median over iters
  double p95_skew_us = 0;
  std::vector<int> missing_ranks;
  std::string error;                             // first collective failure, if any
  std::vector<RankLateness> stragglers() const;  // sorted, latest first
  nlohmann::json to_json() const;
  std::string to_text() const;
};

StragglerResult run_stragglers(ProbeContext& ctx, const StragglerOptions& opts = {});

// waits[r][i] = rank r's wait in iteration i (us). Exposed for tests.
StragglerResult analyze_stragglers(const std::vector<std::vector<double>>& waits,
                                   const std::vector<std::string>& hosts, double late_us);

}  // namespace collie::probes
