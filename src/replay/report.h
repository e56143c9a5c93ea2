#pragma once
// What a replay measured (runner.h) against what the dumps recorded: each call's time (its
// slowest participant), each rank's totals, the calls whose time differs most from the recorded
// durations, and the nccl-tests table of each op kind (one table per kind and group size; rows
// aggregate the calls of one size, dtype, op and root: time is their mean, algbw/busbw as perf
// computes them for that collective, #wrong N/A because a replay does not check data, in-place
// cells N/A as with --placement out). Text for people, JSON ("collie.replay.v1") for tools.
// Pure functions over values; thread-safe.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "replay/plan.h"
#include "replay/runner.h"
#include "reports/result.h"

namespace collie::replay {

struct CallTime {
  double replayed_us = 0;   // the slowest participant's mean time
  int slowest_rank = -1;    // replay rank
  double recorded_us = -1;  // the slowest participant's recorded duration; -1 when none recorded
};

struct RankTotals {
  size_t ops = 0;
  double pass_us = 0;       // one pass, first op to last
  double ops_us = 0;        // sum of its ops' times
  double recorded_us = 0;   // sum of the recorded durations it has
  size_t recorded_ops = 0;  // ops with a recorded duration
};

struct ReplayMeta {
  std::string version, backend, dumps;
  int warmup = 0, iters = 0;
};

struct ReplayResult {
  ReplayMeta meta;
  std::vector<CallTime> calls;  // plan.calls order
  std::vector<RankTotals> ranks;
  std::vector<std::vector<double>> op_us;  // per replay rank, its ops' times (plan order)
  std::vector<reports::ResultRow> rows;    // the tables' rows, table by table
  std::vector<int> row_ranks;              // the group size of each row
};

// REQUIRES: times.size() == plan.ranks.size(), times[r].op_us.size() == plan.ranks[r].size().
ReplayResult summarize(const ReplayPlan& plan, const std::vector<RankTimes>& times,
                       ReplayMeta meta);

// Indices of the calls with a recorded duration, by |replayed - recorded|, largest first; at
// most k.
std::vector<size_t> largest_differences(const ReplayResult& r, size_t k);

struct TextOptions {
  size_t top = 10;      // calls listed as differing most
  bool per_op = false;  // every call, one line each
};
std::string to_text(const ReplayPlan& plan, const ReplayResult& r, const TextOptions& o);

// {schema: "collie.replay.v1", version, backend, dumps, dump_world, played, warmup, iters,
//  groups[], notes[], ranks[], calls[] (each with every participant's entry, counts and times),
//  largest_differences[], rows[] (collie.perf.v1 rows)}; documented in docs/traffic.md.
nlohmann::json to_json(const ReplayPlan& plan, const ReplayResult& r);

}  // namespace collie::replay
