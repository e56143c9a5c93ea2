#pragma once
// Statistics for the regression gate: relative spread and the Mann-Whitney U test (the median
// and percentiles are collie::median / percentile in core/stats.h).
// Pure functions on copies; thread-safe.
#include <vector>

namespace collie::reports {

// (max - min) / median of `v`, 0 when fewer than two values or the median is 0.
double relative_spread(const std::vector<double>& v);

struct MannWhitney {
  double u = 0;  // U statistic of sample `a` (pairs a > b, ties count 1/2)
  double z = 0;  // normal approximation, tie- and continuity-corrected; > 0: a tends larger
  double p = 1;  // two-sided p-value
};

// Two-sided Mann-Whitney U test (normal approximation with tie correction, as used for sample
// sizes >= 8 per side). Why not a t-test: per-iteration times are skewed with long tails
// (preemption, interrupts), and ranks are robust to both. REQUIRES: both non-empty.
MannWhitney mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace collie::reports
