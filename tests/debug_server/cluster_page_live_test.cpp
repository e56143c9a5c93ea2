// The cluster page (/) of a live 4-rank `collie perf` job (real processes, debug servers started
// by --debug-port), rendered by a real headless Chromium: it shows the 4 ranks in step; then rank
// 3 really stalls (COLLIE_PERF_TEST_STALL keeps it out of its next row while a file exists, so
// ranks 0-2 wait in that row's first collective) and the page marks rank 3 as the straggler and
// the waiting ranks as stalled; a rank whose process is stopped (SIGSTOP) is marked unreachable.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "support/child_process.h"

namespace {

using collie::testing::ChildProcess;
using Json = nlohmann::json;
using namespace std::chrono_literals;

// The DOM after the page's scripts ran ("" when chromium could not run).
std::string chromium_dom(const std::string& url) {
  char dir[] = "/tmp/collie_chromium_XXXXXX";
  if (mkdtemp(dir) == nullptr) return "";
  const std::string cmd = fmt::format(
      "timeout 40 /usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-quic "
      "--no-first-run --disable-background-networking --disable-component-update --disable-sync "
      "--disable-dev-shm-usage --user-data-dir={} --virtual-time-budget=1000 --dump-dom '{}' "
      "2>/dev/null",
      dir, url);
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  pclose(p);
  std::filesystem::remove_all(dir);
  return out;
}

int count(const std::string& s, const std::string& re) {
  const std::regex r(re);
  return static_cast<int>(
      std::distance(std::sregex_iterator(s.begin(), s.end(), r), std::sregex_iterator()));
}

TEST(ClusterPageLive, ChromiumShowsFourRanksAndMarksTheStalledOne) {
  const std::string stall = fmt::format("/tmp/collie_page_stall_{}", getpid());
  std::filesystem::remove(stall);
  ChildProcess job({COLLIE_CLI_PATH, "perf", "-np", "4", "-N", "0", "-b", "8", "-e", "1K", "-w",
                    "0", "-n", "2", "-c", "0", "--debug-port", "0"},
                   {{"COLLIE_LOG_LEVEL", "info"},
                    {"COLLIE_PERF_TEST_STALL", "3:" + stall},
                    {"COLLIE_ENABLE_TEST_HOOKS", "1"}});
  const std::regex url_re("debug server for rank 0 at http://127.0.0.1:([0-9]+)");
  std::smatch m;
  ASSERT_TRUE(job.wait_for_err(
      [&](const std::string& err) { return std::regex_search(err, m, url_re); }, 20s))
      << job.err();
  const int port = std::stoi(m[1].str());
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(10, 0);
  auto analysis = [&](const std::string& query) {
    auto r = cli.Get("/v1/cluster/analyze?" + query);
    return r && r->status == 200 ? Json::parse(r->body) : Json();
  };
  // All four servers published and the job past its first rows.
  for (int i = 0; i < 100 && analysis("")["ranks_with_dumps"].size() != 4; ++i) {
    std::this_thread::sleep_for(100ms);
  }
  const std::string page = fmt::format("http://127.0.0.1:{}/?refresh_ms=600000", port);

  std::string dom = chromium_dom(page + "&stall_ms=5000");
  ASSERT_NE(dom.find("collie cluster view"), std::string::npos) << dom;
  EXPECT_EQ(count(dom, "<tr class=\"rank ok\" data-rank=\"[0-3]\">"), 4) << dom;
  // Each rank's last op: the timed all_reduce, or the driver's own all_gather / barrier /
  // cycle-boundary broadcast.
  EXPECT_GE(count(dom, "<td>(all_reduce|barrier|all_gather|broadcast) #[0-9]+</td>"), 4) << dom;
  EXPECT_NE(dom.find("all 4 ranks in step"), std::string::npos) << dom;

  // A real stall: rank 3 stays out of its next row; ranks 0-2 wait in its first collective.
  std::ofstream(stall) << "stall\n";
  Json a;
  for (int i = 0; i < 100; ++i) {
    a = analysis("stall_ms=1000");
    if (!a.is_null() && a["culprits"] == "3") break;  // collie.analyze.v2: ranges
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(a["culprits"], "3") << a.dump(2) << job.err();
  dom = chromium_dom(page + "&stall_ms=1000");
  EXPECT_EQ(count(dom, "<tr class=\"rank [a-z]+\" data-rank="), 4) << dom;
  EXPECT_NE(dom.find("<tr class=\"rank straggler\" data-rank=\"3\">"), std::string::npos) << dom;
  EXPECT_EQ(count(dom, "<tr class=\"rank stalled\" data-rank=\"[0-2]\">"), 3) << dom;
  EXPECT_NE(dom.find("Not all ranks joining collective, sequence number:"), std::string::npos);
  EXPECT_NE(dom.find("missing rank 3"), std::string::npos) << dom;

  // A rank whose process stops answering (stopped, as a hung host would be) is unreachable.
  auto st = cli.Get("/v1/cluster/status");
  ASSERT_TRUE(st && st->status == 200);
  const pid_t rank2 = Json::parse(st->body)["ranks"][2]["status"]["pid"].get<pid_t>();
  kill(rank2, SIGSTOP);
  dom = chromium_dom(page + "&stall_ms=1000&timeout_ms=500");
  kill(rank2, SIGCONT);
  EXPECT_NE(dom.find("<tr class=\"rank unreachable\" data-rank=\"2\">"), std::string::npos) << dom;

  std::filesystem::remove(stall);
  job.signal(SIGTERM);
  const auto rc = job.wait(20s);
  ASSERT_TRUE(rc.has_value()) << job.err();
  EXPECT_EQ(*rc, 143) << job.err();
}

}  // namespace
