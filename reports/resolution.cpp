#include "reports/resolution.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "reports/compare.h"

namespace collie::reports {
namespace {

// Order statistics of n independent standard normal values, n = 1..20 (numerical integration of
// the order statistics' densities; the even medians, the mean of the two middle values, by
// simulation): the variance of the median, and the mean and variance of the maximum.
constexpr double kMedianVar[] = {1,      0.5,    0.4487, 0.2988, 0.2868, 0.216,  0.2104,
                                 0.1676, 0.1661, 0.1381, 0.1372, 0.1173, 0.1168, 0.1027,
                                 0.1017, 0.0901, 0.09,   0.0814, 0.0808, 0.0731};
constexpr double kMaxMean[] = {0,      0.5642, 0.8463, 1.0294, 1.163,  1.2672, 1.3522,
                               1.4236, 1.485,  1.5388, 1.5864, 1.6292, 1.668,  1.7034,
                               1.7359, 1.766,  1.7939, 1.82,   1.8445, 1.8675};
constexpr double kMaxVar[] = {1,      0.6817, 0.5595, 0.4917, 0.4475, 0.4159, 0.3919,
                              0.3729, 0.3574, 0.3443, 0.3332, 0.3236, 0.3152, 0.3077,
                              0.301,  0.295,  0.2895, 0.2845, 0.2799, 0.2757};
constexpr int kTable = 20;

double median_var(int n) {
  if (n <= kTable) return kMedianVar[std::max(n, 1) - 1];
  return std::numbers::pi / (2.0 * n);
}
double max_mean(int n) { return kMaxMean[std::clamp(n, 1, kTable) - 1]; }
double max_var(int n) { return kMaxVar[std::clamp(n, 1, kTable) - 1]; }

// z with P(Z > z) = p for a standard normal Z (0 < p < 0.5), by bisection on erfc.
double upper_quantile(double p) {
  double lo = 0, hi = 10;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(mid / std::numbers::sqrt2) > p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

// The same for Student's t with `dof` degrees of freedom (the noise is estimated from the
// baseline's own runs), by the Cornish-Fisher expansion around z.
double upper_t_quantile(double p, int dof) {
  const double z = upper_quantile(p), v = std::max(dof, 1);
  const double z3 = z * z * z, z5 = z3 * z * z;
  return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v);
}

// The gate's worsening <-> a shift of ln(time).
double to_log(double worse, Metric m) {
  if (m == Metric::Time) return std::log1p(std::max(worse, -0.999999));
  return -std::log1p(-std::min(worse, 0.999999));
}
double from_log(double d, Metric m) { return m == Metric::Time ? std::expm1(d) : -std::expm1(-d); }

}  // namespace

Resolution resolve(const std::vector<std::vector<double>>& baseline_runs, int current_runs,
                   int rows_compared, double asked, bool widen, Metric metric) {
  Resolution r;
  r.current_runs = current_runs;
  r.allowance = asked;
  double ss = 0;
  int dof = 0;
  for (const auto& runs : baseline_runs) {
    std::vector<double> logs;
    for (double t : runs)
      if (t > 0) logs.push_back(std::log(t));
    if (logs.size() < 2) continue;
    double mean = 0;
    for (double x : logs) mean += x;
    mean /= static_cast<double>(logs.size());
    for (double x : logs) ss += (x - mean) * (x - mean);
    dof += static_cast<int>(logs.size()) - 1;
    const int n = static_cast<int>(logs.size());
    r.baseline_runs = r.rows == 0 ? n : std::min(r.baseline_runs, n);
    ++r.rows;
  }
  if (dof == 0 || current_runs < 1) return r;
  r.noise = std::sqrt(ss / dof);
  const double z = upper_t_quantile(0.05 / std::max(rows_compared, 1), dof);
  auto resolvable_log = [&](int nb, int nc) {
    return z * r.noise * std::sqrt(median_var(nb) + median_var(nc));
  };
  r.resolvable = from_log(resolvable_log(r.baseline_runs, current_runs), metric);
  if (widen) r.allowance = std::max(asked, r.resolvable);
  const double spread =
      r.noise * (max_mean(r.baseline_runs) + max_mean(current_runs)) +
      1.2816 * r.noise * std::sqrt(max_var(r.baseline_runs) + max_var(current_runs));
  // A regression needs the closest runs beyond the allowance and the medians beyond `resolvable`.
  const double median_spread =
      1.2816 * r.noise * std::sqrt(median_var(r.baseline_runs) + median_var(current_runs));
  r.detectable = from_log(
      std::max(to_log(r.allowance, metric) + spread, to_log(r.resolvable, metric) + median_spread),
      metric);
  // Runs on each side that would resolve what was asked (the baseline remade with as many).
  if (r.resolvable > asked) {
    r.runs_for_asked = -1;
    for (int n = std::max(r.baseline_runs, current_runs); n <= 50; ++n) {
      if (resolvable_log(n, n) <= to_log(asked, metric)) {
        r.runs_for_asked = n;
        break;
      }
    }
  }
  return r;
}

}  // namespace collie::reports
