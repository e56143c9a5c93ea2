// Real processes: `collie perf -np 2 --duration 3s --debug-port 0` soaks for about 3 s, and while
// it runs rank 0's /metrics (URL from its "debug server for rank 0 at ..." log line) carries the
// live bandwidth gauges and op counters Prometheus would scrape; then it exits 0 with rows.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(PerfSoak, DurationRunsLiveMetricsThenExitsWithRows) {
  char dir[] = "/tmp/collie_soak_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string out_path = std::string(dir) + "/out.txt";
  const std::string err_path = std::string(dir) + "/err.txt";
  const auto started = Clock::now();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, STDOUT_FILENO);
    dup2(e, STDERR_FILENO);
    setenv("COLLIE_LOG_LEVEL", "info", 1);
    execl(COLLIE_CLI_PATH, COLLIE_CLI_PATH, "perf", "-np", "2", "--duration", "3s", "-b", "8", "-e",
          "1K", "-w", "0", "-n", "5", "--debug-port", "0", static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto deadline = started + std::chrono::seconds(10);
  const std::regex url_re("debug server for rank 0 at http://([0-9.]+):([0-9]+)");
  std::string metrics;
  bool seen = false;
  while (!seen && Clock::now() < deadline) {
    std::smatch m;
    const std::string err = slurp(err_path);
    if (std::regex_search(err, m, url_re)) {
      httplib::Client cli(m[1].str(), std::stoi(m[2].str()));
      cli.set_connection_timeout(1, 0);
      cli.set_read_timeout(2, 0);
      if (auto r = cli.Get("/metrics"); r && r->status == 200) {
        metrics = r->body;
        seen = metrics.find("collie_perf_busbw_gbps{") != std::string::npos &&
               metrics.find("collie_collective_ops_total{") != std::string::npos;
      }
    }
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const bool scraped_while_running = Clock::now() - started < std::chrono::milliseconds(2900);
  int status = 0;
  pid_t done = 0;
  while ((done = waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
  const std::string out = slurp(out_path);
  const std::string err = slurp(err_path);
  std::system((std::string("rm -rf ") + dir).c_str());
  ASSERT_NE(done, 0) << "perf --duration 3s still running after 10 s\n" << out << err;
  EXPECT_TRUE(seen) << "no live perf/op series on rank 0's /metrics:\n" << metrics << err;
  EXPECT_TRUE(scraped_while_running) << "metrics only seen after the soak should have ended";
  EXPECT_NE(metrics.find("collective=\"all_reduce\""), std::string::npos) << metrics;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << "\n" << err;
  EXPECT_GE(elapsed_s, 2.9) << "stopped before --duration 3s";
  // Rows of the 1 KiB size, from more than one cycle: the table keeps printing while soaking.
  size_t rows_1k = 0;
  for (size_t p = out.find("\n        1024 "); p != std::string::npos;
       p = out.find("\n        1024 ", p + 1))
    ++rows_1k;
  EXPECT_GE(rows_1k, 2u) << out;
}

}  // namespace
