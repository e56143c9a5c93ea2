#include "reports/result.h"

#include <algorithm>
#include <cmath>

#include "core/stats.h"

namespace collie::reports {

IterStats compute_iter_stats(std::vector<double> t) {
  IterStats s;
  if (t.empty()) return s;
  std::sort(t.begin(), t.end());
  const int n = static_cast<int>(t.size());
  s.samples = n;
  s.min_us = t.front();
  s.max_us = t.back();
  s.p50_us = median(t);  // the midpoint, as every other median in collie
  s.p95_us = percentile_sorted(t, 0.95);
  s.p99_us = percentile_sorted(t, 0.99);
  double sum = 0;
  for (double v : t) sum += v;
  s.mean_us = sum / n;
  double var = 0;
  for (double v : t) var += (v - s.mean_us) * (v - s.mean_us);
  s.cv = s.mean_us > 0 ? std::sqrt(var / n) / s.mean_us : 0;
  return s;
}

std::vector<int> find_stragglers(const std::vector<ResultRow>& rows, int world_size,
                                 double threshold) {
  std::vector<int> slow_count(std::max(world_size, 0), 0);
  int considered = 0;
  for (const auto& r : rows) {
    if (static_cast<int>(r.rank_time_us.size()) != world_size || world_size < 2) continue;
    ++considered;
    const double med = median(r.rank_time_us);
    for (int i = 0; i < world_size; ++i)
      if (r.rank_time_us[i] > med * (1 + threshold)) ++slow_count[i];
  }
  std::vector<int> out;
  for (int i = 0; i < world_size; ++i)
    if (considered > 0 && slow_count[i] * 2 > considered) out.push_back(i);
  return out;
}

Summary summarize(const std::vector<ResultRow>& rows, int world_size) {
  Summary s;
  double sum = 0;
  for (const auto& r : rows) {
    sum += r.busbw_gbps;
    if (r.busbw_gbps > s.peak_busbw_gbps) {
      s.peak_busbw_gbps = r.busbw_gbps;
      s.peak_size_bytes = r.size_bytes;
    }
    s.largest_size_bytes = std::max(s.largest_size_bytes, r.size_bytes);
    if (r.wrong > 0) s.wrong_total += r.wrong;
  }
  if (!rows.empty()) s.avg_busbw_gbps = sum / static_cast<double>(rows.size());
  double largest_sum = 0;
  int largest_n = 0;
  for (const auto& r : rows) {
    if (r.size_bytes != s.largest_size_bytes) continue;
    largest_sum += r.busbw_gbps;
    ++largest_n;
  }
  if (largest_n > 0) s.largest_size_busbw_gbps = largest_sum / largest_n;
  s.stragglers = find_stragglers(rows, world_size);
  return s;
}

}  // namespace collie::reports
