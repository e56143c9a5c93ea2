#pragma once
// Combining rows: several runs (or -N cycles of one run) become one row per key with the median
// of time/algbw/busbw, the pooled per-iteration samples and the run-to-run spread. Used by
// `collie report baseline` and by compare, so both sides of a comparison are combined the same
// way. Pure functions; thread-safe.
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "reports/load.h"

namespace collie::reports {

// What identifies "the same measurement" across runs (the backend is per file).
struct RowKey {
  std::string collective, dtype, redop, placement;
  int root = -1;
  int64_t size_bytes = 0;
  auto tie() const { return std::tie(collective, dtype, redop, placement, root, size_bytes); }
  bool operator<(const RowKey& o) const { return tie() < o.tie(); }
  bool operator==(const RowKey& o) const { return tie() == o.tie(); }
};

RowKey key_of(const ResultRow& r);
// "all_reduce float sum out 1048576 B" (root shown only for rooted collectives).
std::string describe(const RowKey& k);

// Which value of a run's per-iteration samples stands for the run in the CI gate.
//   P10: the 10th percentile (nearest rank): what the build and the network can do. Noise on a
//        shared machine only adds time to iterations; a slower link or slower code slows every
//        one of them, the fast ones too. Over 30 reruns on a 2-vCPU VM the per-run p10 of a
//        4 MiB all_reduce stayed within 0.97-1.10x of its median where the per-run median moved
//        0.90-2.84x. The default.
//   P50: the median iteration: also sees a regression that slows only some iterations (stalls),
//        at the price of that run-to-run noise.
enum class RunStatistic { P10, P50 };
const char* run_statistic_name(RunStatistic s);  // "p10" | "p50"

// One run's value for a row: the statistic of its -I samples, else its time per call.
double run_value_of(const ResultRow& r, RunStatistic s);

// One combined row per key, in first-seen order; spread[i] belongs to rows[i] (its
// run_p10_us / run_p50_us hold run_value_of each input row, in input order).
struct CombinedRows {
  std::vector<ResultRow> rows;
  std::vector<RowSpread> spread;
};
CombinedRows combine_rows(const std::vector<const ResultRow*>& rows);

// The rows of one run with its -N cycles combined: one row per key, in first-seen order.
std::vector<ResultRow> rows_of_run(const LoadedRun& run);

// What the gate's inputs must have in common and hold, checked by `report baseline` and
// `report compare` alike (a baseline or a comparison that mixes them gates against the wrong
// numbers, or against none):
// The flags that change what a row with the same key measures, with the value a run that did not
// give the flag used: alltoallv's traffic (compared when both runs record it), -a (how times are
// reduced across ranks), -m, -z, -G and -K (which iterations the samples hold).
struct MeaningFlag {
  const char* name;  // the key in run.flags
  const char* given_by_default;
};
extern const std::vector<MeaningFlag> kRowMeaningFlags;
// Throws InvalidArgument, one line naming both files and what differs (backend, world size, or a
// flag of kRowMeaningFlags), ending in `advice`.
void check_same_configuration(const LoadedRun& a, const LoadedRun& b, const std::string& advice);
// Why `run` cannot be evidence for its configuration ("x.json was interrupted by SIGINT", "x.json
// did not complete (complete: false)"); "" when it completed.
std::string incomplete_reason(const LoadedRun& run);
// Throws InvalidArgument naming the file and the row when a row has no usable time: a time per
// call or a run value (run_value_of, either statistic) that is not above 0. Such a row would make
// every ratio 0 and the gate answer "unchanged" to any slowdown.
void check_gate_times(const LoadedRun& run);

// Combines `runs` (each first reduced to one row per key, its -N cycles combined) into a
// baseline whose spread records every run's value per row. Throws InvalidArgument when a run did
// not complete, has a row without a usable time, or the runs are not of one configuration
// (check_same_configuration).
// REQUIRES: !runs.empty().
LoadedRun make_baseline(const std::vector<LoadedRun>& runs);

// The baseline file: the collie.perf.v1 document (any reader of results reads it) plus a
// top-level "baseline" object {runs, sources} and per row "baseline" {runs, min/max of time and
// busbw, p50_min/max_us, run_p10_us, run_p50_us}.
nlohmann::json baseline_to_json(const LoadedRun& baseline, const std::vector<std::string>& sources);

}  // namespace collie::reports
