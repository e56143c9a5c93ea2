// Ranks as threads over one HashStore (the shared harness over the test-only "fake" backend,
// bare); the barrier only uses the group's store.
#include "monitored_barrier/monitored_barrier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "core/error.h"
#include "metrics/metrics.h"
#include "support/multiprocess.h"
#include "support/time_scale.h"

namespace collie {
namespace {

// Runs two monitored barriers on each of `n` ranks but the `absent` ones (which never call it);
// returns each rank's TimeoutError text ("" = none).
std::vector<std::string> barrier_errors(int n, const std::vector<int>& absent, Millis timeout,
                                        bool wait_all) {
  std::vector<std::string> errors(n);
  const testing::RunOptions opts{.backend = "fake",
                                 .mode = testing::Mode::Threads,
                                 .group_timeout = Millis(10000),
                                 .stack = false};
  const auto result = testing::run_ranks(
      n,
      [&](testing::RankContext& ctx) {
        if (std::find(absent.begin(), absent.end(), ctx.rank) != absent.end()) return;
        try {
          monitored_barrier(*ctx.pg, timeout, wait_all);
          monitored_barrier(*ctx.pg, timeout, wait_all);  // reusable: fresh keys each call
        } catch (const TimeoutError& e) {
          errors[ctx.rank] = e.what();
        }
      },
      opts);
  EXPECT_TRUE(result.ok()) << result.summary();
  return errors;
}

TEST(MonitoredBarrier, PassesWhenEveryoneArrives) {
  for (const auto& e : barrier_errors(4, {}, Millis(2000), false)) EXPECT_EQ(e, "");
}

// collie_monitored_barrier_timeouts_total{backend="fake",...} as /metrics serves it.
uint64_t barrier_timeouts() {
  const std::string text = Metrics::global().serialize();
  std::smatch m;
  static const std::regex re(
      "collie_monitored_barrier_timeouts_total\\{backend=\"fake\"[^}]*\\} ([0-9]+)");
  return std::regex_search(text, m, re) ? std::stoull(m[1].str()) : 0;
}

TEST(MonitoredBarrier, FailFastNamesTheFirstMissingRank) {
  const uint64_t before = barrier_timeouts();
  auto errs = barrier_errors(4, {1, 3}, Millis(300), false);
  // Each rank that failed (0 naming rank 1, 2 pointing at rank 0) counts one timeout.
  EXPECT_EQ(barrier_timeouts(), before + 2) << Metrics::global().serialize();
  EXPECT_EQ(errs[0].rfind("[Rank 0]: Rank 1 failed to pass monitoredBarrier in 300 ms", 0), 0u)
      << errs[0];
  EXPECT_NE(errs[2].find("[Rank 2]: monitored_barrier of group 0 failed; rank 0 reported: [Rank "
                         "0]: Rank 1 failed to pass monitoredBarrier in 300 ms"),
            std::string::npos)
      << errs[2];
}

TEST(MonitoredBarrier, WaitAllRanksNamesAllMissingWithinOneTimeout) {
  const auto start = std::chrono::steady_clock::now();
  auto errs = barrier_errors(6, {1, 3, 4, 5}, Millis(400), true);
  EXPECT_LT(std::chrono::steady_clock::now() - start,
            testing::scaled(std::chrono::milliseconds(1500)));
  EXPECT_EQ(errs[0].rfind("[Rank 0]: Ranks 1, 3-5 failed to pass monitoredBarrier in 400 ms", 0),
            0u)
      << errs[0];
}

TEST(MonitoredBarrier, MissingCoordinatorIsReported) {
  auto errs = barrier_errors(2, {0}, Millis(100), false);
  EXPECT_NE(errs[1].find("rank 0 (the coordinator) gave no verdict"), std::string::npos) << errs[1];
}

}  // namespace
}  // namespace collie
