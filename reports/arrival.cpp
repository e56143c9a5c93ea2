#include "reports/arrival.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "core/stats.h"

namespace collie::reports {
namespace {

// For each value, the median of the others (itself left out), from one sort: a median per value
// would cost O(n^2 log n), hours for perf -I's rank 0 at 100,000 ranks. REQUIRES: v.size() >= 2,
// no NaN.
std::vector<double> medians_of_others(const std::vector<double>& v) {
  const size_t n = v.size(), m = n - 1;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> sorted(n);
  for (size_t i = 0; i < n; ++i) sorted[i] = v[order[i]];
  std::vector<double> out(n);
  for (size_t k = 0; k < n; ++k) {
    auto at = [&](size_t j) { return sorted[j < k ? j : j + 1]; };  // the others, sorted
    out[order[k]] = m % 2 == 1 ? at(m / 2) : (at(m / 2 - 1) + at(m / 2)) / 2;
  }
  return out;
}

}  // namespace

ArrivalStats analyze_arrivals(const std::vector<std::vector<double>>& waits) {
  ArrivalStats res;
  size_t iters = SIZE_MAX;
  for (const auto& w : waits)
    if (!w.empty()) iters = std::min(iters, w.size());
  if (iters == SIZE_MAX) iters = 0;
  res.iters = static_cast<int>(iters);
  std::vector<std::vector<double>> late(waits.size());
  std::vector<int> last_count(waits.size(), 0);
  std::vector<double> skews;
  for (size_t i = 0; i < iters; ++i) {
    double longest = -INFINITY, shortest = INFINITY;
    size_t last = 0;
    for (size_t r = 0; r < waits.size(); ++r) {
      if (waits[r].empty()) continue;
      longest = std::max(longest, waits[r][i]);
      if (waits[r][i] < shortest) {
        shortest = waits[r][i];
        last = r;
      }
    }
    skews.push_back(longest - shortest);
    ++last_count[last];
    for (size_t r = 0; r < waits.size(); ++r)
      if (!waits[r].empty()) late[r].push_back(longest - waits[r][i]);
  }
  for (size_t r = 0; r < waits.size(); ++r) {
    if (waits[r].empty()) {
      res.missing.push_back(static_cast<int>(r));
      continue;
    }
    RankArrival a;
    a.rank = static_cast<int>(r);
    if (iters > 0) {
      a.late_p50_us = median(late[r]);
      a.late_p95_us = percentile(late[r], 0.95);
      a.last_fraction = static_cast<double>(last_count[r]) / static_cast<double>(iters);
      a.wait_p50_us = median(std::vector<double>(waits[r].begin(), waits[r].begin() + iters));
    }
    res.ranks.push_back(a);
  }
  if (!skews.empty()) {
    res.skew_p50_us = median(skews);
    res.skew_p95_us = percentile(skews, 0.95);
  }
  return res;
}

std::vector<RankArrival> late_ranks(const ArrivalStats& s, const LateRule& rule) {
  std::vector<RankArrival> out;
  if (s.iters == 0 || s.ranks.size() < 2) return out;
  std::vector<double> lates;
  for (const auto& r : s.ranks) lates.push_back(r.late_p50_us);
  const std::vector<double> crowd = medians_of_others(lates);
  for (size_t k = 0; k < s.ranks.size(); ++k)
    if (lates[k] >= rule.late_us && lates[k] >= rule.stand_out * crowd[k])
      out.push_back(s.ranks[k]);
  std::sort(out.begin(), out.end(), [](const RankArrival& a, const RankArrival& b) {
    return a.late_p50_us > b.late_p50_us;
  });
  return out;
}

std::vector<int> cpu_starved(const std::vector<double>& shares, const CpuRule& rule) {
  std::vector<int> out;
  if (shares.size() < 2) return out;
  const std::vector<double> crowd = medians_of_others(shares);
  for (size_t r = 0; r < shares.size(); ++r)
    if (shares[r] >= crowd[r] + rule.excess && shares[r] >= rule.stand_out * crowd[r])
      out.push_back(static_cast<int>(r));
  return out;
}

}  // namespace collie::reports
