// The HTML cluster page rendered by a real headless Chromium against live rank servers.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <regex>

#include "debug_server/test_cluster.h"

namespace collie {
namespace {

using testing::TestCluster;

// Returns the DOM after scripts ran ("" when chromium could not run).
std::string chromium_dom(const std::string& url) {
  char dir[] = "/tmp/collie_chromium_XXXXXX";
  if (mkdtemp(dir) == nullptr) return "";
  const std::string cmd = fmt::format(
      "timeout 40 /usr/bin/chromium --headless --no-sandbox --disable-gpu "
      "--disable-background-networking --disable-component-update --disable-sync --no-first-run "
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

int count(const std::string& s, const std::regex& re) {
  return static_cast<int>(
      std::distance(std::sregex_iterator(s.begin(), s.end(), re), std::sregex_iterator()));
}

TEST(ClusterPage, ChromiumShowsEveryRankAndMarksTheStalledOne) {
  TestCluster c(4);
  c.run_collectives(7);
  // refresh_ms is long so the dump shows the server-rendered data, not a refresh race.
  std::string dom = chromium_dom(fmt::format("http://127.0.0.1:{}/?refresh_ms=600000", c.port(1)));
  ASSERT_NE(dom.find("collie cluster view"), std::string::npos) << dom;
  EXPECT_EQ(count(dom, std::regex("<tr class=\"rank ok\" data-rank=\"[0-3]\">")), 4) << dom;
  EXPECT_NE(dom.find("all_reduce #7"), std::string::npos);
  EXPECT_NE(dom.find("all 4 ranks in step"), std::string::npos);

  c.hang_next(3);  // ranks 0-2 wait in all_reduce #8, rank 3 never joins
  dom = chromium_dom(
      fmt::format("http://127.0.0.1:{}/?refresh_ms=600000&stall_ms=0", c.port(0)));
  EXPECT_EQ(count(dom, std::regex("<tr class=\"rank [a-z]+\" data-rank=")), 4) << dom;
  EXPECT_NE(dom.find("<tr class=\"rank straggler\" data-rank=\"3\">"), std::string::npos) << dom;
  EXPECT_EQ(count(dom, std::regex("<tr class=\"rank stalled\"")), 3) << dom;
  EXPECT_NE(dom.find("Not all ranks joining collective, sequence number: 8"), std::string::npos);

  c.rank(2).server->stop();
  dom = chromium_dom(fmt::format("http://127.0.0.1:{}/?refresh_ms=600000", c.port(0)));
  EXPECT_NE(dom.find("<tr class=\"rank unreachable\" data-rank=\"2\">"), std::string::npos) << dom;
}

}  // namespace
}  // namespace collie
