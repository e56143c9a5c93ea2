// Ranks as threads over one HashStore; the barrier only uses the group's store.
#include "monitored_barrier/monitored_barrier.h"

#include <gtest/gtest.h>

#include <regex>
#include <thread>

#include "core/error.h"
#include "metrics/metrics.h"
#include "support/fake_backend.h"

namespace collie {
namespace {

using testing::fake_info;
using testing::FakeBackend;

std::vector<std::string> run_ranks(int n, const std::vector<int>& absent, Millis timeout,
                                   bool wait_all) {
  auto store = std::make_shared<HashStore>(Millis(10000));
  std::vector<std::string> errors(n);
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r) {
    if (std::find(absent.begin(), absent.end(), r) != absent.end()) continue;
    ts.emplace_back([&, r] {
      FakeBackend pg(fake_info(r, n, store, Millis(10000)));
      try {
        monitored_barrier(pg, timeout, wait_all);
        monitored_barrier(pg, timeout, wait_all);  // reusable: fresh keys each call
      } catch (const TimeoutError& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : ts) t.join();
  return errors;
}

TEST(MonitoredBarrier, PassesWhenEveryoneArrives) {
  for (const auto& e : run_ranks(4, {}, Millis(2000), false)) EXPECT_EQ(e, "");
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
  auto errs = run_ranks(4, {1, 3}, Millis(300), false);
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
  auto errs = run_ranks(6, {1, 3, 4, 5}, Millis(400), true);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
  EXPECT_EQ(errs[0].rfind("[Rank 0]: Ranks 1, 3-5 failed to pass monitoredBarrier in 400 ms", 0),
            0u)
      << errs[0];
}

TEST(MonitoredBarrier, MissingCoordinatorIsReported) {
  auto errs = run_ranks(2, {0}, Millis(100), false);
  EXPECT_NE(errs[1].find("rank 0 (the coordinator) gave no verdict"), std::string::npos) << errs[1];
}

}  // namespace
}  // namespace collie
