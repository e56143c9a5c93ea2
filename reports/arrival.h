#pragma once
// Arrival skew at a collective: who arrived last, by how much, from local durations only. Each
// rank times, per iteration, how long it waited inside the call (from entering it to its
// completion). Ranks are released together, so the last rank to arrive waits least, and a rank's
// lateness in an iteration is (longest wait of any rank) - (its wait): no clock is shared across
// hosts. Used by `collie perf -I` (per size) and the stragglers probe (probes/stragglers.h).
// Pure functions on values; thread-safe.
#include <string>
#include <vector>

namespace collie::reports {

struct RankArrival {
  int rank = 0;
  double late_p50_us = 0;    // median lateness over the iterations
  double late_p95_us = 0;    // nearest-rank p95
  double last_fraction = 0;  // share of iterations in which this rank arrived last
  double wait_p50_us = 0;    // median time inside the call
};

struct ArrivalStats {
  int iters = 0;                   // iterations every reporting rank has
  std::vector<RankArrival> ranks;  // rank order, reporting ranks only
  std::vector<int> missing;        // ranks with no waits
  double skew_p50_us = 0;          // per iteration latest minus earliest arrival; median
  double skew_p95_us = 0;
};

// waits[r][i]: rank r's wait in iteration i (us); an empty row is a rank that did not report.
// Iterations past the shortest reporting row are ignored.
ArrivalStats analyze_arrivals(const std::vector<std::vector<double>>& waits);

// When lateness names a rank: late in absolute terms and standing out from the others, so that
// load noise every rank sees now and then (a few ms on a busy host) is not blamed on one.
struct LateRule {
  double late_us = 500;  // median lateness at least this
  double stand_out = 3;  // and at least this many times the median of the other ranks' medians
};

// The ranks the rule names, latest first.
std::vector<RankArrival> late_ranks(const ArrivalStats& s, const LateRule& rule = {});

// A rank that waited for a CPU far more than the others during a timed loop: something else keeps
// its core busy, so it is slow inside the collectives as well as between them (where lateness
// sees it). shares[r]: seconds rank r's threads waited for a CPU per second of the loop
// (core/cpu_wait.h). Named: at least `excess` above the others' median and `stand_out` times it,
// so a host where every rank queues for a core (other jobs' load) names nobody. perf -I applies
// it to each rank's wait over the whole run (reports::find_cpu_stragglers): measured here, 2
// ranks each on its own core, healthy runs differed by up to 0.21 s per s (151 runs), a core
// shared with a busy loop by 0.90-1.0, and 0.37-0.43 with another busy loop on the machine.
struct CpuRule {
  double excess = 0.3;     // s per s of loop, above the others' median
  double stand_out = 1.5;  // and this many times it
};
std::vector<int> cpu_starved(const std::vector<double>& shares, const CpuRule& rule = {});

}  // namespace collie::reports
