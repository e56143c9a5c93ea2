// Real processes: `collie perf -np 2 --duration 3s --debug-port 0` soaks for about 3 s, and while
// it runs rank 0's /metrics (URL from its "debug server for rank 0 at ..." log line) carries the
// live bandwidth gauges and op counters Prometheus would scrape; then it exits 0 with rows.
// The counters and Inspector series are the measured ops only: perf's own barriers, result
// all_gathers and stop-flag broadcasts (issue 33, item 7) are not in them.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "debug_server/job_log.h"
#include "support/child_process.h"
#include "support/time_scale.h"

namespace {

using Clock = std::chrono::steady_clock;
using collie::testing::ChildProcess;
using namespace std::chrono_literals;
using collie::testing::scaled;

// The values of label `name` on the lines of `text` whose metric name starts with `prefix`.
std::set<std::string> label_values(const std::string& text, const std::string& prefix,
                                   const std::string& name) {
  std::set<std::string> out;
  const std::regex re(name + "=\"([^\"]*)\"");
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (line.rfind(prefix, 0) == 0 && std::regex_search(line, m, re)) out.insert(m[1]);
  }
  return out;
}

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

// A run of all_reduce alone: /metrics counts all_reduce and nothing else, /metrics/inspector has
// AllReduce series and nothing else, though perf lines the ranks up with barriers, gathers each
// size's results with all_gather and broadcasts the soak's stop flag every cycle.
TEST(PerfSoak, MetricsCountOnlyTheMeasuredOps) {
  ChildProcess job({COLLIE_CLI_PATH, "perf", "-np", "2", "--duration", "4s", "-b", "1K", "-e", "4K",
                    "-w", "0", "-n", "5", "--debug-port", "0"},
                   {{"COLLIE_LOG_LEVEL", "info"}, {"COLLIE_INSPECTOR_WINDOW", "1s"}});
  const std::string url = collie::testing::rank0_debug_url(job);
  ASSERT_FALSE(url.empty()) << job.err();
  httplib::Client cli(url);
  cli.set_connection_timeout(1, 0);
  cli.set_read_timeout(2, 0);
  auto get = [&](const char* path) {
    auto r = cli.Get(path);
    return r && r->status == 200 ? r->body : std::string();
  };
  // Two scrapes of the Inspector page a window apart: the first opens the window, the second
  // shows the ops of the closed one. Then /metrics, after a few of perf's cycles.
  get("/metrics/inspector");
  std::this_thread::sleep_for(1500ms);
  const std::string inspector = get("/metrics/inspector");
  const std::string metrics = get("/metrics");
  // The flight recorder still has them: a hang in perf's bookkeeping is diagnosed like any.
  const std::string recorder = get("/v1/flight_recorder");
  const auto rc = job.wait(std::chrono::duration_cast<std::chrono::milliseconds>(scaled(20s)));
  ASSERT_TRUE(rc.has_value()) << "perf --duration 4s still running\n" << job.err();
  EXPECT_EQ(*rc, 0) << job.err();
  EXPECT_EQ(label_values(metrics, "collie_collective_ops_total", "collective"),
            std::set<std::string>{"all_reduce"})
      << metrics;
  EXPECT_EQ(label_values(metrics, "collie_collective_duration_seconds", "collective"),
            std::set<std::string>{"all_reduce"})
      << metrics;
  EXPECT_EQ(label_values(inspector, "nccl_", "collective"), std::set<std::string>{"AllReduce"})
      << inspector;
  EXPECT_TRUE(label_values(inspector, "nccl_", "p2p_operation").empty()) << inspector;
  for (const char* op : {"\"gloo:all_reduce\"", "\"gloo:barrier\"", "\"gloo:all_gather\""})
    EXPECT_NE(recorder.find(op), std::string::npos) << op << " not in the flight recorder";
}

}  // namespace
