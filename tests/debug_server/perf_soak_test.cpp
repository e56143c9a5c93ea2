// Real processes: `collie perf -np 2 --duration 3s --debug-port 0` soaks for about 3 s, and while
// it runs rank 0's /metrics (URL from its "debug server for rank 0 at ..." log line) carries the
// live bandwidth gauges and op counters Prometheus would scrape; then it exits 0 with rows.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <regex>
#include <string>
#include <thread>

#include "support/child_process.h"
#include "support/time_scale.h"

namespace {

using Clock = std::chrono::steady_clock;
using collie::testing::ChildProcess;
using namespace std::chrono_literals;
using collie::testing::scaled;

TEST(PerfSoak, DurationRunsLiveMetricsThenExitsWithRows) {
  const auto started = Clock::now();
  ChildProcess job({COLLIE_CLI_PATH, "perf", "-np", "2", "--duration", "3s", "-b", "8", "-e", "1K",
                    "-w", "0", "-n", "5", "--debug-port", "0"},
                   {{"COLLIE_LOG_LEVEL", "info"}});
  const std::regex url_re("debug server for rank 0 at http://([0-9.]+):([0-9]+)");
  std::string metrics;
  bool seen = false, scraped_while_running = false;
  const auto limit = scaled(10s);
  while (!seen && Clock::now() - started < limit) {
    std::smatch m;
    const std::string err = job.err();
    if (std::regex_search(err, m, url_re)) {
      httplib::Client cli(m[1].str(), std::stoi(m[2].str()));
      cli.set_connection_timeout(1, 0);
      cli.set_read_timeout(2, 0);
      if (auto r = cli.Get("/metrics"); r && r->status == 200) {
        metrics = r->body;
        seen = metrics.find("collie_perf_busbw_gbps{") != std::string::npos &&
               metrics.find("collie_collective_ops_total{") != std::string::npos;
        // The job had not ended when its series were read: they are live, not left-overs.
        scraped_while_running = seen && !job.wait(0ms).has_value();
      }
    }
    if (!seen) std::this_thread::sleep_for(100ms);
  }
  const auto rc = job.wait(
      std::chrono::duration_cast<std::chrono::milliseconds>(limit - (Clock::now() - started)));
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
  const std::string out = job.out();
  ASSERT_TRUE(rc.has_value()) << "perf --duration 3s still running after " << limit.count()
                              << " s\n"
                              << out << job.err();
  EXPECT_TRUE(seen) << "no live perf/op series on rank 0's /metrics:\n" << metrics << job.err();
  EXPECT_TRUE(scraped_while_running) << "metrics only seen after the soak had ended";
  EXPECT_NE(metrics.find("collective=\"all_reduce\""), std::string::npos) << metrics;
  ASSERT_EQ(*rc, 0) << job.err();
  EXPECT_GE(elapsed_s, 2.9) << "stopped before --duration 3s";
  // Rows of the 1 KiB size, from more than one cycle: the table keeps printing while soaking.
  size_t rows_1k = 0;
  for (size_t p = out.find("\n        1024 "); p != std::string::npos;
       p = out.find("\n        1024 ", p + 1))
    ++rows_1k;
  EXPECT_GE(rows_1k, 2u) << out;
}

}  // namespace
