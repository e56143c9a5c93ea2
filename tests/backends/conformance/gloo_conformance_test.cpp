// The conformance suite (conformance.h) over the gloo backend: every case at world sizes 1, 2, 3,
// 4 and 8, ranks as processes (tests/support/multiprocess.h), one ctest test per (world, case).
#include <gtest/gtest.h>

#include "backends/conformance/conformance.h"
#include "support/multiprocess.h"

namespace collie::testing::conformance {
namespace {

class GlooConformance : public ::testing::TestWithParam<std::tuple<int, size_t>> {};

TEST_P(GlooConformance, Case) {
  const auto [world, index] = GetParam();
  RunOptions opts;
  opts.backend = "gloo";
  opts.deadline = Millis(120000);
  auto result = run_ranks(
      world,
      [index = index](RankContext& ctx) {
        const Outcome o = cases()[index].run(*ctx.pg, Settings{});
        check(o.ok(), "rank {}: {}", ctx.rank, o.summary());
      },
      opts);
  EXPECT_TRUE(result.ok()) << result.summary();
}

INSTANTIATE_TEST_SUITE_P(Worlds, GlooConformance,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 8),
                                            ::testing::Range(size_t{0}, cases().size())),
                         [](const auto& info) {
                           return fmt::format("w{}_{}", std::get<0>(info.param),
                                              cases()[std::get<1>(info.param)].name);
                         });

}  // namespace
}  // namespace collie::testing::conformance
