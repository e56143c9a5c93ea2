#pragma once
// Combining every rank's numbers for one measured row into a reports::ResultRow: the pure half
// of the driver's cross-rank step (the all_gather itself stays in driver.cpp). No ProcessGroup,
// no I/O, no shared state: safe to call from any thread.
//
// Each rank packs its LocalResult with pack_local(); the driver all_gathers the packed vectors
// (every rank's vector has the same length, because every rank ran the same iteration count).
// Every rank calls combine_totals() on the gathered block (the stop flag and #wrong decide
// whether it goes on and how it exits); only the rank that keeps the rows (rank 0) calls
// combine_ranks() for the full ResultRow.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "perf/collective.h"
#include "perf/options.h"
#include "reports/result.h"

namespace collie::perf {

// What one rank measured for one size and placement.
struct LocalResult {
  double avg_us = 0;
  int64_t wrong = -1;  // -1 = not checked
  int64_t first_wrong = -1;
  std::vector<double> iter_us;  // one time per timed iteration
  std::vector<double> wait_us;  // -I on a host runtime: the wait inside each iteration's calls
  // -I: seconds this rank's threads waited for a CPU per second of the timed loop (core/
  // cpu_wait.h); NaN where the kernel does not say.
  double cpu_wait = std::nan("");
};

// Offsets inside one rank's packed record: [avg, wrong, first_wrong, stop, iteration times...,
// and with `waits` as many wait times and the CPU wait].
inline constexpr size_t kPackedAvg = 0, kPackedWrong = 1, kPackedFirstWrong = 2, kPackedStop = 3,
                        kPackedIterAt = 4;

// `waits`: append one wait per iteration (NaN where r.wait_us has none) and r.cpu_wait, so that
// every rank's record has the same length whatever its runtime measured.
std::vector<double> pack_local(const LocalResult& r, int stop_flag, bool waits = false);

// The row being combined: what every rank measured the same way.
struct RowContext {
  const CollectiveDescriptor* desc = nullptr;  // never null
  DType dtype = DType::Float32;
  ReduceOp op = ReduceOp::Sum;  // written as "none" unless desc->reduces
  int root = -1;
  int cycle = 0;
  Layout layout;
  bool in_place = false;
  int iters = 0;       // timed iterations: every record carries this many times
  bool waits = false;  // ... and as many waits (pack_local's `waits`)
};

// What every rank needs from a row: the stop flag and the wrong count.
struct RowTotals {
  // Summed over the ranks that checked; -1 when none did.
  int64_t wrong = -1;
  // The largest stop flag any rank sent (0 = keep going).
  int stop = 0;
};

// `gathered`: world_size records of pack_local() of equal length, rank order. PRECONDITIONS:
// world_size >= 1, gathered.size() == world_size * (kPackedIterAt + iterations).
RowTotals combine_totals(const std::vector<double>& gathered, int world_size);

// The full row, with the totals beside it (wrong == row.wrong).
struct Combined : RowTotals {
  reports::ResultRow row;
};

// `gathered`: world_size records of pack_local(), rank order. PRECONDITIONS: world_size >= 1,
// gathered.size() == world_size * (kPackedIterAt + ctx.iters * (ctx.waits ? 2 : 1) +
// (ctx.waits ? 1 : 0)),
// o.iter_skip <= ctx.iters. Uses o.average, o.iter_skip, o.report_iters and o.agg_iters. With
// ctx.waits and every rank's waits measured, the row carries them and their arrival statistics
// (reports/arrival.h), past the -K skipped iterations, and every rank's CPU wait.
Combined combine_ranks(const RowContext& ctx, const PerfOptions& o,
                       const std::vector<double>& gathered, int world_size);

}  // namespace collie::perf
