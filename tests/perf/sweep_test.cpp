// perf::sweep_sizes walks -b..-e as nccl-tests does: a factor above 1 multiplies, 1 adds -i.
// A factor that would take a size past -e ends the sweep without computing the product, so no
// -f, however large, overflows (the sanitize label runs this under UBSan).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "perf/options.h"

namespace collie::perf {
namespace {

PerfOptions sweep(int64_t min, int64_t max, int64_t factor, int64_t step = 1 << 20) {
  PerfOptions o;
  o.min_bytes = min;
  o.max_bytes = max;
  o.step_factor = factor;
  o.step_bytes = step;
  return o;
}

TEST(SweepSizes, FactorMultipliesUpToAndIncludingTheLastSize) {
  EXPECT_EQ(sweep_sizes(sweep(8, 64, 8)), (std::vector<int64_t>{8, 64}));
  EXPECT_EQ(sweep_sizes(sweep(8, 100, 2)), (std::vector<int64_t>{8, 16, 32, 64}));
  EXPECT_EQ(sweep_sizes(sweep(8, 8, 2)), (std::vector<int64_t>{8}));
}

TEST(SweepSizes, StepAddsWhenTheFactorIsOne) {
  EXPECT_EQ(sweep_sizes(sweep(8, 32, 1, 8)), (std::vector<int64_t>{8, 16, 24, 32}));
}

TEST(SweepSizes, AHugeFactorEndsAfterTheFirstSizeWithoutOverflow) {
  const int64_t tib = int64_t{1} << 40;
  EXPECT_EQ(sweep_sizes(sweep(1 << 30, tib, std::numeric_limits<int64_t>::max())),
            (std::vector<int64_t>{1 << 30}));
  EXPECT_EQ(sweep_sizes(sweep(1 << 30, tib, int64_t{1} << 62)), (std::vector<int64_t>{1 << 30}));
  // The largest sizes: 512 GiB x 2 = 1 TiB is the last, with nothing computed past it.
  EXPECT_EQ(sweep_sizes(sweep(tib / 2, tib, 2)), (std::vector<int64_t>{tib / 2, tib}));
}

}  // namespace
}  // namespace collie::perf
