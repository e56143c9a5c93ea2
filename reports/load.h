#pragma once
// Loading result files for `collie report`: one clear InvalidArgument line for every way a file
// can be unusable (missing, empty, truncated, not JSON, not a collie file, a schema version this
// collie cannot read), plus the optional baseline spread that `collie report baseline` adds.
// Thread-compatible; no global state.
#include <string>
#include <vector>

#include "reports/result.h"

namespace collie::reports {

// Run-to-run spread of one baseline row (all zero for a plain result file).
struct RowSpread {
  int runs = 1;
  double time_min_us = 0, time_max_us = 0;
  double busbw_min_gbps = 0, busbw_max_gbps = 0;
  // Range of the per-run median iteration time (0 when the runs had no -I samples); robust to
  // the outliers that move the mean time of a row on a busy machine.
  double p50_min_us = 0, p50_max_us = 0;
  // Each run's values (run_value_of, baseline.h), in run order; what the gate judges. Empty in
  // baseline files written before they were recorded.
  std::vector<double> run_p10_us, run_p50_us;
};

struct LoadedRun {
  std::string path;
  std::string label;  // short name for tables and plot legends (the file name without .json)
  RunResult result;
  int baseline_runs = 0;          // > 0 when the file is a baseline made of that many runs
  std::vector<RowSpread> spread;  // parallel to result.rows when baseline_runs > 0
  // A baseline's run files, in the order of each row's per-run values (empty when not recorded).
  std::vector<std::string> baseline_sources;
};

// Reads `path`. Throws InvalidArgument naming the path and what to do about it.
LoadedRun load_run(const std::string& path);

// Loads every path; labels that collide get the backend and then an index appended.
std::vector<LoadedRun> load_runs(const std::vector<std::string>& paths);

}  // namespace collie::reports
