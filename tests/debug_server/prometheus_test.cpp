// The shipped Prometheus config, alert rules and Grafana dashboard against a real Prometheus
// server scraping four live rank servers (ranks as threads, ops fed continuously): every
// dashboard query and every alert expression must return data.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "debug_server/test_cluster.h"
#include "store/socket_util.h"

namespace collie {
namespace {

namespace fs = std::filesystem;
using testing::TestCluster;
using Json = nlohmann::json;

std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

int run(const std::string& cmd) { return std::system(cmd.c_str()); }

std::vector<std::string> dashboard_queries(const fs::path& path) {
  std::vector<std::string> out;
  const Json dash = Json::parse(read_file(path));
  for (const auto& p : dash["panels"]) {
    for (const auto& t : p["targets"]) {
      std::string e = t["expr"];
      e = std::regex_replace(e, std::regex("=~\"\\$[a-z]+\""), "=~\".*\"");
      out.push_back(e);
    }
  }
  return out;
}

std::vector<std::string> rule_exprs(const fs::path& path) {
  std::vector<std::string> out;
  std::istringstream in(read_file(path));
  std::string line;
  const std::regex re("^\\s*expr:\\s*(.*)$");
  std::smatch m;
  while (std::getline(in, line)) {
    // Scaled like the 1 s intervals: "no progress for 2m" becomes 4 s.
    if (std::regex_match(line, m, re)) {
      out.push_back(std::regex_replace(std::string(m[1]), std::regex("\\[2m\\]"), "[4s]"));
    }
  }
  return out;
}

TEST(PrometheusServer, EveryDashboardAndAlertQueryReturnsData) {
  const fs::path src = fs::path(COLLIE_SOURCE_DIR) / "scripts";
  const fs::path dir = fs::temp_directory_path() / fmt::format("collie_prom_{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir / "targets");
  ASSERT_EQ(run(fmt::format("promtool check rules {} > /dev/null",
                            (src / "prometheus/collie_alerts.yml").string())),
            0);

  TestCluster c(4);
  for (int r = 0; r < 4; ++r) {
    c.rank(r).metrics.set_perf_result("gloo", "all_reduce", "float", 64u << 20, 1.5, 2.0);
  }
  std::atomic<bool> stop{false};
  std::thread soak([&] {
    while (!stop) {
      c.run_collectives(1, 1 << (c.seq() % 16));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });

  // Targets from the running job, through any rank's debug server (addresses from the store).
  ASSERT_EQ(run(fmt::format("python3 {} --from http://127.0.0.1:{} -o {}",
                            (src / "prometheus/collie_file_sd.py").string(), c.port(2),
                            (dir / "targets/collie.json").string())),
            0);
  EXPECT_EQ(Json::parse(read_file(dir / "targets/collie.json")).size(), 4u);
  // The shipped config with 1 s intervals so the test needs seconds, not minutes.
  std::string cfg = read_file(src / "prometheus/prometheus.yml");
  cfg = std::regex_replace(cfg, std::regex("(scrape|evaluation)_interval: 15s"), "$1_interval: 1s");
  cfg = std::regex_replace(cfg, std::regex("scrape_timeout: 5s"), "scrape_timeout: 1s");
  std::ofstream(dir / "prometheus.yml") << cfg;
  fs::copy_file(src / "prometheus/collie_alerts.yml", dir / "collie_alerts.yml");
  ASSERT_EQ(
      run(fmt::format("promtool check config {} > /dev/null", (dir / "prometheus.yml").string())),
      0);

  uint16_t port = 0;
  close(net::listen_on("127.0.0.1", 0, &port));
  const pid_t prom = fork();
  if (prom == 0) {
    const std::string cfg_arg = "--config.file=" + (dir / "prometheus.yml").string();
    const std::string db_arg = "--storage.tsdb.path=" + (dir / "data").string();
    const std::string addr_arg = fmt::format("--web.listen-address=127.0.0.1:{}", port);
    freopen((dir / "prometheus.log").c_str(), "w", stderr);
    execl("/usr/bin/prometheus", "prometheus", cfg_arg.c_str(), db_arg.c_str(), addr_arg.c_str(),
          "--log.level=warn", static_cast<char*>(nullptr));
    _exit(127);
  }
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(5, 0);
  auto query = [&](const std::string& q) -> Json {
    auto r = cli.Get("/api/v1/query", httplib::Params{{"query", q}}, httplib::Headers{});
    if (!r || r->status != 200) return Json();
    return Json::parse(r->body);
  };

  // Let Prometheus collect a few scrapes of the healthy soak, then make every alert condition
  // true: a desync and a barrier timeout on rank 1, and rank 2 never joining the next collective
  // (ranks 0, 1 and 3 wait in it with no further progress). The perf floor is 10 GB/s.
  // Wait until Prometheus has scraped every rank (it may start slowly on a loaded machine).
  for (int i = 0; i < 40; ++i) {
    Json j = query("count(collie_desync_detected_total)");
    if (!j.is_null() && !j["data"]["result"].empty() && j["data"]["result"][0]["value"][1] == "4") {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  c.rank(1).metrics.record_desync("gloo");
  c.rank(1).metrics.record_barrier_timeout("gloo");
  stop = true;
  soak.join();
  c.hang_next(2);

  std::vector<std::string> queries = dashboard_queries(src / "grafana/collie.json");
  const auto rules = rule_exprs(src / "prometheus/collie_alerts.yml");
  EXPECT_EQ(rules.size(), 4u);
  queries.insert(queries.end(), rules.begin(), rules.end());
  EXPECT_GE(queries.size(), 12u);
  std::vector<std::string> empty = queries;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  while (!empty.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    std::vector<std::string> still;
    for (const auto& q : empty) {
      Json j = query(q);
      if (j.is_null() || j["status"] != "success" || j["data"]["result"].empty())
        still.push_back(q);
    }
    empty = still;
  }
  // The stalled-rank alert must name the waiting ranks, not the absent one.
  Json stalled = query(rules[0]);
  kill(prom, SIGTERM);
  waitpid(prom, nullptr, 0);
  for (const auto& q : empty) ADD_FAILURE() << "no data for: " << q;
  if (!empty.empty()) std::cerr << read_file(dir / "prometheus.log");
  std::set<std::string> ranks;
  for (const auto& s : stalled["data"]["result"]) ranks.insert(s["metric"]["rank"]);
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1", "3"})) << stalled.dump();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace collie
