#pragma once
// The nccl-tests table, byte-compatible with nccl-tests 2.19 so tools that parse its output parse
// collie's unchanged: same header lines, row format "%12li  %12li  %8s  %6s  %6s" followed per
// placement by "  %7s  %6s  %6s  %6g" (or "    N/A" when unchecked), numbers shrinking their
// precision to fit the column width. collie-only lines (version, straggler, summary) are '#'
// comments, which those parsers skip. Pure functions; thread-safe.
#include <string>
#include <vector>

#include "reports/result.h"

namespace collie::reports {

// `value` right-aligned in `width` columns with as many decimals (2, 1, 0) as fit, then
// exponent notation, as nccl-tests prints time and bandwidth.
std::string format_float(double value, int width);

// One table line (no newline) for one size. Either placement may be null (not run): its cells
// print N/A. An unchecked placement (wrong < 0) prints N/A in #wrong only.
// REQUIRES: at least one of out/in is non-null; both describe the same size/dtype/op/root.
// `per_iter` (-I) adds nccl-tests' i_min / i_max / i_p99 / i_cv% cells after each placement.
std::string format_row(const ResultRow* out, const ResultRow* in, bool per_iter = false);

struct TableHeader {
  std::string collective;  // "all_reduce"
  int64_t min_bytes = 0, max_bytes = 0, step_bytes = 0, step_factor = 2;
  int warmup_iters = 1, iters = 20, agg_iters = 1, check_iters = 1;
  int world_size = 1;
  std::vector<std::string> hosts;  // indexed by rank
  std::vector<int> pids;           // indexed by rank (may be empty)
  std::string device = "cpu";
  std::vector<RankDevice> devices;  // indexed by rank; a missing entry prints host memory
  int graph_launches = 0;           // -G: the nThread line's "graph: N"
  bool blocking = false;            // -z: nccl-tests' "# Blocking Enabled" line
  bool timestamps = false;          // -S: the column header names the timestamp column
  bool per_iter = false;            // -I: the per-iteration columns and their header line
  // One '#' line under the nThread line when the iterations per size are not all `iters`
  // (collie perf without -n: fewer above 1 MiB); empty = none, as nccl-tests prints.
  std::string iters_note;
};

// "# Collective test starting" through the three column-header lines, each ending in '\n'.
std::string format_header(const TableHeader& h);
// The column-header lines only (the last three lines of format_header), trailing spaces
// included as nccl-tests prints them; `timestamps` adds the -S column's title, `per_iter` the
// -I columns (nccl-tests' per-iteration header).
std::string format_column_header(bool timestamps = false, bool per_iter = false);
// "# Out of bounds values" through "# Collective test concluded", plus collie's summary lines.
std::string format_trailer(const std::string& collective, const Summary& s);
// "# Straggler: rank 3 ..." line (empty string when there is none).
std::string format_straggler_line(const std::vector<ResultRow>& rows, const Summary& s);

// "Is this normal?": what the link can carry and, per collective, its peak busbw as a share of
// it ("x % of what this link can do"), as '#' lines after the last table; or one line saying why
// nothing could be compared.
std::string format_capacity_lines(const std::vector<ResultRow>& rows, const LinkCapacity& c);

// -I's arrival block: per row with arrival statistics (reports/arrival.h), the rank that arrived
// last most often, by how much, the skew, the rank that queued longest for a CPU against the
// others and the ranks late_ranks() names; then a verdict line naming the rank that kept the
// others waiting in more than half of the rows, or saying that none did, and one per rank
// find_cpu_stragglers() names. Rows without statistics are left out; when none has any, one line
// saying why (empty for one rank). `hosts` indexed by rank (may be short).
std::string format_arrival_lines(const std::vector<ResultRow>& rows,
                                 const std::vector<std::string>& hosts, int world_size);

}  // namespace collie::reports
