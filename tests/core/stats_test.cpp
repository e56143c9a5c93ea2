// The one median and percentile (core/stats.h), and that perf's per-iteration p50 is that median.
#include "core/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "reports/result.h"

namespace collie {
namespace {

TEST(Stats, MedianIsTheMidpoint) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({7}), 7);
  EXPECT_DOUBLE_EQ(median({NAN, 5, NAN, 1}), 3);
  EXPECT_TRUE(std::isnan(median({})));
  EXPECT_TRUE(std::isnan(median({NAN})));
}

TEST(Stats, PercentileIsNearestRank) {
  std::vector<double> v(100);
  std::iota(v.begin(), v.end(), 1.0);  // 1..100
  EXPECT_DOUBLE_EQ(percentile(v, 0.95), 95);
  EXPECT_DOUBLE_EQ(percentile(v, 0.99), 99);
  EXPECT_DOUBLE_EQ(percentile(v, 0.901), 91);
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(v, 1), 100);
  EXPECT_DOUBLE_EQ(percentile({4, 3, 2, 1}, 0.5), 2);  // a sample, unlike median()
  EXPECT_DOUBLE_EQ(percentile({10, NAN, 20}, 1), 20);
  EXPECT_DOUBLE_EQ(percentile({5}, 0.3), 5);
  EXPECT_TRUE(std::isnan(percentile({}, 0.5)));
  EXPECT_DOUBLE_EQ(percentile({1, 2}, -3), 1);  // clamped
  EXPECT_DOUBLE_EQ(percentile({1, 2}, 7), 2);
}

TEST(Stats, PerfIterationP50IsTheMedian) {
  // Even count: t[n/2] would say 30; the median says 25, as every other median in collie.
  const auto s = reports::compute_iter_stats({40, 10, 30, 20});
  EXPECT_DOUBLE_EQ(s.p50_us, 25);
  EXPECT_DOUBLE_EQ(s.p95_us, 40);
  EXPECT_EQ(s.samples, 4);
}

}  // namespace
}  // namespace collie
