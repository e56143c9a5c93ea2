#pragma once
// nccl-tests' `-J` JSON layout (version 3, as nccl-tests 2.19 writes it from src/util.cu), both
// ways: collie's -J file carries these keys at the top level, beside the collie.perf.v1 keys
// (schema, run, rows, complete, summary) that hold collie's extras, so NVIDIA's
// tools/analyze_perf_json.py reads a collie file unchanged; and `collie report` reads files
// written by nccl-tests itself. Field by field in docs/results-schema.md.
// Pure functions over values; thread-safe.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/result.h"

namespace collie::reports {

inline constexpr int kNcclTestsJsonVersion = 3;

// What the nccl-tests keys need beyond RunResult (the run's flags, as nccl-tests records them).
struct NcclTestsConfig {
  std::vector<std::string> args;  // the command line, argv[0] first
  std::vector<std::string> env;   // "NAME=value" entries worth recording (see the writer)
  int64_t min_bytes = 0, max_bytes = 0, step_bytes = 0, step_factor = 2;
  int warmup_iters = 1, iters = 20, agg_iters = 1, check_iters = 1;
  bool blocking = false;
  int graph_launches = 0;  // -G: config.graph
  bool per_iter = false;   // -I: rows carry the per-iteration blocks
  int iter_skip = 0;       // -K
  double min_busbw = -1;   // the avg-bandwidth check (--min-busbw / NCCL_TESTS_MIN_BW); -1 = none
  std::vector<int> pids;   // indexed by rank (may be empty)
};

// The nccl-tests top-level keys for `r`: version, start_time, args, env, nccl_version, config,
// results (one object per size: out_of_place / in_place, and with -I the *_per_iter blocks),
// out_of_bounds, average_bus_bandwidth, errors, end_time (null while the run is in progress).
// Rows of one size and both placements must be adjacent in r.rows (out before in), as the
// driver produces them. Each result also names its collective and its rows under "collie".
nlohmann::json to_nccl_tests_json(const RunResult& r, const NcclTestsConfig& c);

// The document collie perf -J writes: to_json(r) and to_nccl_tests_json(r, c) side by side.
nlohmann::json to_results_document(const RunResult& r, const NcclTestsConfig& c);

// True when `j` looks like a file nccl-tests wrote (an integer "version", a "results" array and
// no collie "schema").
bool is_nccl_tests_json(const nlohmann::json& j);

// Reads a file nccl-tests wrote into collie's model: one row per placement that was run, the
// collective taken from args[0] (".../all_reduce_perf") or experiment_name, hosts from
// config.devices, per-rank times from per_process_max_times_us. Throws InvalidArgument naming
// the missing or mistyped field.
RunResult run_from_nccl_tests_json(const nlohmann::json& j);

}  // namespace collie::reports
