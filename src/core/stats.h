#pragma once
// The one median and percentile every module uses (perf's per-iteration stats, probes, the
// regression gate, benchmarks). Pure functions on copies; thread-safe.
#include <vector>

namespace collie {

// Median: the middle value, or the mean of the two middle values for an even count. NaN
// entries are ignored; NaN when nothing is left.
double median(std::vector<double> v);

// Nearest-rank percentile, p in [0, 1]: the smallest sample with at least p of the samples at
// or below it (p = 0.5 of 1..4 is 2; use median() for the midpoint). NaN entries are ignored;
// NaN when nothing is left.
double percentile(std::vector<double> v, double p);
// The same on values already sorted ascending, without NaN. REQUIRES: !sorted.empty().
double percentile_sorted(const std::vector<double>& sorted, double p);

}  // namespace collie
