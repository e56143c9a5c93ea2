#pragma once
// What a baseline can resolve in the CI gate (compare.h): the run-to-run noise of its runs, the
// allowance runs of an unchanged build pass, the smallest regression the gate then catches, and
// the runs per side that would resolve a tighter allowance. The gate's rule decides on the median
// run (beyond the allowance) and on the closest runs (best current vs worst baseline beyond it
// too), so both numbers follow from the noise and the run counts:
//   noise        sigma: the pooled standard deviation of ln(run value) within each baseline row,
//                over every row compared (a row's runs share its size, so their spread is noise)
//   resolvable   z * sigma * sqrt(v(nb) + v(nc)): the medians of nb and nc runs of one build
//                differ by more only with chance 5 % / rows (one-sided, so a gate of many rows
//                stays quiet too; z is Student's t quantile for that chance with the noise's
//                degrees of freedom, as sigma is estimated from those few runs); v(n) is the
//                variance of the median of n runs in units of sigma^2
//   detectable   allowance + sigma * (E[max of nb] + E[max of nc]) + 1.2816 * sigma *
//                sqrt(Var[max of nb] + Var[max of nc]): a worsening this large leaves even the
//                closest runs beyond the allowance 9 times in 10 for a row (order statistics of
//                normal noise); at least resolvable + 1.2816 * sigma * sqrt(v(nb) + v(nc)), as the
//                median runs must differ by more than `resolvable` too
// All in the metric's terms (busbw: 1 - current/baseline; time: current/baseline - 1).
// Pure functions; thread-safe.
#include <vector>

namespace collie::reports {

enum class Metric;

struct Resolution {
  int rows = 0;            // baseline rows the noise was pooled over (those with >= 2 runs)
  int baseline_runs = 0;   // runs per row on the baseline side (the fewest of those rows)
  int current_runs = 0;    // runs per row on the current side
  double noise = 0;        // sigma (relative run-to-run spread); 0 = unknown (fewer than 2 runs)
  double resolvable = 0;   // the allowance an unchanged build passes at (0 when noise unknown)
  double detectable = 0;   // smallest worsening a row catches 9 times in 10 at `allowance`
  double allowance = 0;    // the allowance `detectable` was computed for
  int runs_for_asked = 0;  // runs per side that resolve the asked allowance; 0 = these do,
                           // -1 = more than 50
};

// `baseline_runs`: per compared row, each baseline run's value (time, > 0). `rows_compared` sets
// the per-row chance (5 % / rows). `asked`: the allowance the user asked for (or the default);
// the result's allowance is max(asked, resolvable) when `widen`, else `asked`.
Resolution resolve(const std::vector<std::vector<double>>& baseline_runs, int current_runs,
                   int rows_compared, double asked, bool widen, Metric metric);

}  // namespace collie::reports
