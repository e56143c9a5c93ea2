#include "core/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace collie {
namespace {

std::vector<double> sorted_without_nan(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

double median(std::vector<double> v) {
  v = sorted_without_nan(std::move(v));
  const size_t n = v.size();
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double percentile_sorted(const std::vector<double>& sorted, double p) {
  const double n = static_cast<double>(sorted.size());
  const double rank = std::ceil(std::clamp(p, 0.0, 1.0) * n);  // 1-based
  const size_t i = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

double percentile(std::vector<double> v, double p) {
  v = sorted_without_nan(std::move(v));
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  return percentile_sorted(v, p);
}

}  // namespace collie
