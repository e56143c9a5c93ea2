#pragma once
// The table nccl-tests prints (and collie perf, byte-compatible with it) read back into the
// result model: "# Collective test starting: NAME_perf" names the collective of the rows under
// it, the "#  Rank N Group G Pid P on HOST device ..." lines give every rank's host, and each row
// gives size, count, type, redop, root and per placement time, algbw, busbw and #wrong (with -I
// also i_min, i_max, i_p99, i_cv%). A placement whose cells are all N/A was not run; #wrong N/A
// was not checked. Lines that are neither (mpirun's warnings, other tools' output) are skipped.
// The text has no per-rank times: rows carry none. Pure functions; thread-safe.
#include <string>

#include "reports/result.h"

namespace collie::evidence {

// True when `text` has the table's header lines ("# Collective test starting:" or "# nThread").
bool looks_like_nccl_tests_text(const std::string& text);

// Throws InvalidArgument when no row can be read (quoting at most ~80 characters of the first
// line that looked like one but was not).
reports::RunResult parse_nccl_tests_text(const std::string& text);

}  // namespace collie::evidence
