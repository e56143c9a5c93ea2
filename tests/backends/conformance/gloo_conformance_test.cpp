// The conformance suite (conformance.h) over backends that run_ranks starts
// (tests/support/multiprocess.h: ranks as processes through init_process_group): one ctest test
// per (backend, world size, case). A backend joins with one INSTANTIATE_TEST_SUITE_P line below.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "backends/conformance/conformance.h"
#include "support/multiprocess.h"

namespace collie::testing::conformance {
namespace {

using Param = std::tuple<std::string, int, size_t>;  // backend, world size, index in cases()

class Conformance : public ::testing::TestWithParam<Param> {};

TEST_P(Conformance, Case) {
  const auto& [backend, world, index] = GetParam();
  RunOptions opts;
  opts.backend = backend;
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

// Every case of `backend` at each of `worlds`.
auto over(const std::string& backend, std::vector<int> worlds) {
  return ::testing::Combine(::testing::Values(backend), ::testing::ValuesIn(worlds),
                            ::testing::Range(size_t{0}, cases().size()));
}

std::string name(const ::testing::TestParamInfo<Param>& info) {
  return fmt::format("w{}_{}", std::get<1>(info.param), cases()[std::get<2>(info.param)].name);
}

INSTANTIATE_TEST_SUITE_P(Gloo, Conformance, over("gloo", {1, 2, 3, 4, 8}), name);

}  // namespace
}  // namespace collie::testing::conformance
