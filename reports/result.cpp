#include "reports/result.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

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

namespace {

// The ranks `named` names in more than half of the rows it has a say on (it returns nullopt for
// the rows that carry nothing to judge).
template <typename Named>
std::vector<int> named_in_most(const std::vector<ResultRow>& rows, Named named) {
  std::map<int, int> count;
  int considered = 0;
  for (const auto& r : rows) {
    const std::optional<std::vector<int>> ranks = named(r);
    if (!ranks) continue;
    ++considered;
    for (int rank : *ranks) ++count[rank];
  }
  std::vector<int> out;
  for (const auto& [rank, n] : count)
    if (n * 2 > considered) out.push_back(rank);
  return out;
}

}  // namespace

std::vector<int> find_arrival_stragglers(const std::vector<ResultRow>& rows) {
  return named_in_most(rows, [](const ResultRow& r) -> std::optional<std::vector<int>> {
    if (r.arrival.iters == 0) return std::nullopt;
    std::vector<int> v;
    for (const auto& x : late_ranks(r.arrival)) v.push_back(x.rank);
    return v;
  });
}

std::vector<double> run_cpu_waits(const std::vector<ResultRow>& rows, int* rows_used) {
  size_t world = 0;
  for (const auto& r : rows) world = std::max(world, r.rank_cpu_wait.size());
  std::vector<double> sum(world, 0);
  int n = 0;
  for (const auto& r : rows) {
    if (world == 0 || r.rank_cpu_wait.size() != world) continue;
    ++n;
    for (size_t k = 0; k < world; ++k) sum[k] += r.rank_cpu_wait[k];
  }
  if (rows_used) *rows_used = n;
  if (n == 0) return {};
  for (double& v : sum) v /= n;
  return sum;
}

std::vector<int> find_cpu_stragglers(const std::vector<ResultRow>& rows) {
  return cpu_starved(run_cpu_waits(rows));
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
  s.arrival_stragglers = find_arrival_stragglers(rows);
  s.cpu_stragglers = find_cpu_stragglers(rows);
  return s;
}

std::vector<CapacityShare> capacity_shares(const std::vector<ResultRow>& rows,
                                           const LinkCapacity& c) {
  std::vector<CapacityShare> out;
  if (c.gbps <= 0) return out;
  for (const auto& r : rows) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const CapacityShare& s) { return s.collective == r.collective; });
    if (it == out.end()) {
      out.push_back({r.collective, r.busbw_gbps, r.size_bytes, 0});
      it = out.end() - 1;
    } else if (r.busbw_gbps > it->peak_busbw_gbps) {
      it->peak_busbw_gbps = r.busbw_gbps;
      it->size_bytes = r.size_bytes;
    }
  }
  for (auto& s : out) s.percent = s.peak_busbw_gbps / c.gbps * 100;
  return out;
}

}  // namespace collie::reports
