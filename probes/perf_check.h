#pragma once
// Perf checks of `collie accept` ({"perf": "all_reduce", ...}): the spec's sweep runs through the
// perf engine (src/perf, the same code as `collie perf`) on a world group of every rank, out of
// place, with validation on. Rank 0 gets the rows; every rank's error, if any, reaches rank 0
// through the store so a rank that failed is named. The rules are evaluated in accept.h.
#include <optional>
#include <string>
#include <vector>

#include "perf/options.h"
#include "probes/accept_spec.h"
#include "probes/context.h"
#include "reports/result.h"

namespace collie::probes {

// The engine options for check `c` with `timeout` per step, through the same conversions and
// sweep rules as `collie perf`'s flags (perf/options.h: step_factor 1 adds step_bytes, as -f 1
// adds -i). Throws SpecError naming the key for an unknown collective, dtype or op, a sweep
// nccl-tests would not walk, or a rule size the sweep does not measure;
// messages start with `where` ("" = "check 'NAME'"), pointers are relative to the check.
// Parsing calls it too, so a bad perf check fails before any rank starts.
perf::PerfOptions perf_check_options(const CheckSpec& c, Millis timeout,
                                     const std::string& where = "");

struct PerfCheckResult {
  std::vector<reports::ResultRow> rows;  // rank 0's complete rows (empty elsewhere)
  std::vector<std::string> errors;       // "rank R (host): what went wrong", by rank
  std::vector<int> missing_ranks;        // ranks that did not report within the deadline
  reports::RunMeta meta;                 // rank 0: every rank's host and device, the backend
  std::string store_host;                // the group's rendezvous host (link_capacity.h)
};

// Runs on every rank (REQUIRES: the same check everywhere). Never throws for a failed sweep:
// the failure is in `errors`. Test hooks (COLLIE_PERF_TEST_*) are read from ctx.env.
PerfCheckResult run_perf_check(ProbeContext& ctx, const CheckSpec& c);

}  // namespace collie::probes
