#pragma once
// The CI gate. Matches the rows of a baseline and of one or more current runs by key
// (collective, dtype, op, placement, root, size; backend and world size must agree) and gives
// each row a verdict from RUN-LEVEL values, because on shared machines the variance lives
// between runs: iterations of one run share its scheduler placement and neighbours, so they are
// not independent samples (docs/ci.md, "How a row is judged").
//
// A run's value for a row is a statistic of its -I samples (CompareOptions::statistic: the 10th
// percentile by default, see baseline.h) or, without samples, its time per call. The baseline's
// runs are the runs recorded by `collie report baseline` (their values per row), or the one run
// of a plain results file; each current file is one run.
//   worse   = relative worsening of the median run in the metric (busbw: 1 - current/baseline;
//             time: current/baseline - 1); < 0 is better. One sign convention everywhere.
//   regression   worse > allowed, and even the closest runs (the best current run against the
//                worst baseline run) are worse by more than allowed, and worse > what the
//                baseline's noise makes by chance (Resolution::resolvable, which matters when an
//                allowance is asked below it); needs >= 2 runs on each side (a single run may
//                have sat in a noisy moment, and nothing shows it)
//   improvement  the same the other way
//   unchanged    |worse| <= allowed, or better by more than allowed without the runs to show it
//                (a possible improvement is no reason to stop a pipeline)
//   inconclusive worse > allowed but the runs overlap, or the change is within what the noise
//                makes by chance, or a side has one run: the evidence
//                cannot separate the change from run-to-run noise (more runs decide)
//   wrong-data   a current (or baseline) run reported wrong elements for the row (#wrong > 0)
//   missing      a baseline row the current runs do not have;  new: the reverse (informational)
// A current run that did not complete (interrupted, no summary) makes the whole comparison fail.
// The whole sweep (CompareReport::sweep): each run's geometric mean over the rows that every run on
// both sides measured (wrong-data rows and rows below --min-size left out), judged by the same
// rule against what those per-run values resolve. Run-to-run noise on a shared machine is partly
// each row's own and averages out over rows, so a change that every row shares (slower code,
// a slower transport) shows here well before any one row's noise lets it through. It counts in
// the outcome like a row: a regression fails the gate, an inconclusive sweep makes it inconclusive.
// The allowance: --max-regression when given; by default 5 %, widened to what the baseline's
// runs can resolve (resolution.h) when that is more, so the default never asks the runs for a
// precision their own noise rules out. Either way the report says what the baseline resolves
// and the smallest regression the gate then catches.
// Pure functions; thread-safe.
#include <optional>
#include <string>
#include <vector>

#include "reports/baseline.h"
#include "reports/resolution.h"

namespace collie::reports {

enum class Metric { BusBw, Time };
enum class Verdict { Regression, Improvement, Unchanged, Inconclusive, WrongData, Missing, New };

const char* metric_name(Metric m);    // "busbw" | "time"
const char* verdict_name(Verdict v);  // "regression", ..., "wrong-data", "missing", "new"

struct CompareOptions {
  double max_regression = 0.05;  // allowed relative worsening in the metric (0.05 = 5 %)
  // max_regression is the default, not asked for: widen it to what the baseline resolves.
  bool widen_to_baseline = false;
  int64_t min_size = 0;  // rows below this size are left out (tiny sizes are noisy)
  Metric metric = Metric::BusBw;
  RunStatistic statistic = RunStatistic::P10;
};

struct RowComparison {
  RowKey key;
  Verdict verdict = Verdict::Unchanged;
  double base = 0, current = 0;  // the metric (GB/s or us) of the median run; 0 where absent
  double change = 0;             // current / base - 1 in the metric (busbw: < 0 is worse)
  double worse = 0;              // worsening of the median runs (< 0: better)
  double worse_closest = 0;      // worsening of the closest runs in the verdict's direction
  double allowed = 0;            // the allowed worsening (CompareReport::resolution.allowance)
  int base_runs = 0, current_runs = 0;
  std::string note;    // why: "runs overlap", "1 run per side", "#wrong 3 in cur2.json", ...
  int sweep_rows = 0;  // the whole sweep's judgement: the rows it averages (0 for a row)
};

struct CompareReport {
  std::string baseline_path;
  std::vector<std::string> current_paths;
  std::string backend;
  int world_size = 0;
  CompareOptions options;
  Resolution resolution;  // what the baseline resolves; .allowance is the allowance used
  std::vector<RowComparison> rows;
  // The whole sweep (see above); absent with fewer than 2 rows measured in every run.
  std::optional<RowComparison> sweep;
  Resolution sweep_resolution;  // what the sweep's per-run values resolve; .allowance is used
  std::vector<std::string> incomplete;  // current runs that did not complete, with the reason
  int regressions = 0, improvements = 0, unchanged = 0, inconclusive = 0, wrong = 0, missing = 0,
      added = 0, skipped = 0;
  // Fails on a regression (of a row or of the whole sweep), wrong data, a missing row or an
  // incomplete current run.
  bool failed() const {
    return regressions + wrong + missing > 0 || !incomplete.empty() ||
           (sweep && sweep->verdict == Verdict::Regression);
  }
  // Nothing failed, but a row or the whole sweep could not be decided (more runs decide).
  bool undecided() const {
    return !failed() && (inconclusive > 0 || (sweep && sweep->verdict == Verdict::Inconclusive));
  }
  // "FAIL", "INCONCLUSIVE" (undecided()) or "PASS".
  const char* outcome() const;
};

// Throws InvalidArgument (one line naming the files and the next step) when backends or world
// sizes differ, when the current runs disagree with each other, or when no row matches.
// REQUIRES: !current.empty().
CompareReport compare_runs(const LoadedRun& baseline, const std::vector<LoadedRun>& current,
                           const CompareOptions& opts);

}  // namespace collie::reports
