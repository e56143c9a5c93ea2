#pragma once
// JSON form of the result model (schema "collie.perf.v1", see docs/results-schema.md): conversion
// both ways, an atomic file writer and the reader used by `collie report`.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/atomic_file.h"
#include "core/json_input.h"
#include "reports/result.h"

namespace collie::reports {

nlohmann::json to_json(const ResultRow& r);
// A row's arrival statistics: iters, skew_p50_us / skew_p95_us, ranks[] and late_ranks (the
// ranks reports::late_ranks names).
nlohmann::json arrival_json(const ArrivalStats& a);
// "Is this normal?": kind, what, host, gbps and per collective its peak busbw's share
// (capacity_shares) as collectives[] {collective, peak_busbw_gbps, size_bytes, percent}.
nlohmann::json capacity_json(const LinkCapacity& c, const std::vector<ResultRow>& rows);
nlohmann::json to_json(const RunResult& r);
// Throws collie::InvalidArgument naming the missing/mistyped field, or an unknown schema.
ResultRow row_from_json(const nlohmann::json& j);
RunResult run_from_json(const nlohmann::json& j);

// Deepest nesting a results or report file is read with (core/json_input.h, which also refuses
// a key given twice); real files nest 5 deep.
inline constexpr int kMaxResultsDepth = 64;

// The most bytes a results, baseline or accept report file may have: far above what collie writes
// (-I samples of every iteration of a long sweep on thousands of ranks stay below it).
inline constexpr uint64_t kMaxResultsFileBytes = uint64_t{1} << 30;

// The text of a results, baseline or report file, as every report reader gets it: a regular file
// of at most kMaxResultsFileBytes (core/regular_file.h), so a FIFO cannot block the reader and
// /dev/zero cannot exhaust its memory. Throws InvalidArgument, one line naming the path.
std::string read_report_file(const std::string& path);

// Reads a results file written by collie perf -J (or by nccl-tests -J, see nccl_tests_json.h).
// Throws InvalidArgument (file unreadable, not JSON, a key given twice, wrong schema) with the
// path in the message.
RunResult read_results(const std::string& path);

// Writes `result` to `path` atomically: a temporary file in the same directory, then rename(),
// so a reader never sees a half-written file. Throws collie::Error when the file cannot be
// written. Thread-compatible (one writer per path).
void write_results_atomic(const std::string& path, const RunResult& result);

// Any other report format: collie::write_file_atomic (core/atomic_file.h).
using collie::write_file_atomic;

}  // namespace collie::reports
