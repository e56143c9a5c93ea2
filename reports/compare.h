#pragma once
// The CI gate: matches the rows of a baseline and a current run by key (collective, dtype, op,
// placement, root, size; the backend and world size must agree) and classifies each as a
// regression, an improvement or unchanged. Noise-aware: with >= min_samples per-iteration samples
// on both sides, a change counts only when the Mann-Whitney U test says the two sample sets
// differ (p < alpha) AND the median moved by more than the allowed effect; otherwise the plain
// relative threshold on the row values decides. A baseline that recorded its run-to-run spread
// widens the allowed effect to that spread. Pure functions; thread-safe.
#include <string>
#include <vector>

#include "reports/baseline.h"

namespace collie::reports {

enum class Metric { BusBw, Time };
enum class Verdict { Regression, Improvement, Unchanged, Missing, New };

const char* metric_name(Metric m);    // "busbw" | "time"
const char* verdict_name(Verdict v);  // "regression", "improvement", "unchanged", "missing", "new"

struct CompareOptions {
  double max_regression = 0.05;  // allowed relative worsening (0.05 = 5 %)
  int64_t min_size = 0;          // rows below this size are left out (tiny sizes are noisy)
  Metric metric = Metric::BusBw;
  double alpha = 0.01;  // significance level of the rank test
  int min_samples = 8;  // per side, for the rank test to be used
};

struct RowComparison {
  RowKey key;
  Verdict verdict = Verdict::Unchanged;
  double base = 0, current = 0;  // the metric (GB/s or us); 0 on the side a row is missing
  double change = 0;             // current / base - 1
  double worse = 0;              // relative worsening the verdict used (< 0: better)
  double threshold = 0;          // allowed worsening after the baseline spread
  std::string method;            // "mann-whitney" | "threshold" | "" (missing/new)
  double p = -1;                 // rank-test p-value, -1 when not used
};

struct CompareReport {
  std::string baseline_path, current_path, backend;
  int world_size = 0;
  CompareOptions options;
  std::vector<RowComparison> rows;
  int regressions = 0, improvements = 0, unchanged = 0, missing = 0, added = 0, skipped = 0;
  bool passed() const { return regressions == 0; }
};

// Throws InvalidArgument (one line naming both files and the next step) when the backends or
// world sizes differ or when no row of `current` matches the baseline.
CompareReport compare_runs(const LoadedRun& baseline, const LoadedRun& current,
                           const CompareOptions& opts);

}  // namespace collie::reports
