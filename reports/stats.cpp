#include "reports/stats.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "reports/result.h"

namespace collie::reports {

double relative_spread(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  const double med = median(v);
  return med != 0 ? (*hi - *lo) / std::fabs(med) : 0;
}

MannWhitney mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  // Rank the pooled samples; tied values share the mean of their ranks.
  std::vector<std::pair<double, int>> pooled;
  pooled.reserve(a.size() + b.size());
  for (double v : a) pooled.emplace_back(v, 0);
  for (double v : b) pooled.emplace_back(v, 1);
  std::sort(pooled.begin(), pooled.end());
  const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size());
  const double n = n1 + n2;
  double rank_sum_a = 0, tie_term = 0;
  for (size_t i = 0; i < pooled.size();) {
    size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    const double t = static_cast<double>(j - i);
    const double mean_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k)
      if (pooled[k].second == 0) rank_sum_a += mean_rank;
    tie_term += t * t * t - t;
    i = j;
  }
  MannWhitney r;
  r.u = rank_sum_a - n1 * (n1 + 1) / 2;
  const double mean_u = n1 * n2 / 2;
  const double var_u = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (var_u <= 0) return r;  // every value equal: no evidence of a difference
  const double diff = r.u - mean_u;
  const double corrected = std::max(0.0, std::fabs(diff) - 0.5);
  r.z = std::copysign(corrected / std::sqrt(var_u), diff);
  r.p = std::min(1.0, std::erfc(std::fabs(r.z) / std::sqrt(2.0)));
  return r;
}

}  // namespace collie::reports
