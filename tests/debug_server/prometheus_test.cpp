// The shipped Prometheus config, alert rules and Grafana dashboard against a real Prometheus
// server (Debian package) scraping a real 4-rank `collie perf --duration` soak (processes, debug
// servers from --debug-port) plus a real 2-rank DETAIL job that hit a desync and a monitored
// barrier timeout. Targets come from the shipped file_sd generator, asked through a rank's debug
// server (the addresses are the job's store keys). Every dashboard query (read from collie.json)
// and every alert expression (read from collie_alerts.yml) must return data; the stalled-rank
// alert fires for a real stall (COLLIE_PERF_TEST_STALL) and names the waiting ranks.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "debug_server/job_log.h"
#include "debug_server/prometheus_server.h"
#include "support/child_process.h"

namespace collie {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::ChildProcess;
using testing::rank0_debug_url;
using testing::read_file;
using namespace std::chrono_literals;

int run(const std::string& cmd) { return std::system(cmd.c_str()); }

// Every PromQL expression of the dashboard's panels, with the template variables set to "All".
std::vector<std::string> dashboard_queries(const Json& dash) {
  std::vector<std::string> out;
  for (const auto& p : dash.at("panels")) {
    for (const auto& t : p.value("targets", Json::array())) {
      out.push_back(std::regex_replace(t.at("expr").get<std::string>(),
                                       std::regex("=~\"\\$[a-z]+\""), "=~\".*\""));
    }
  }
  return out;
}

// alert name -> expr, from the rules file ("- alert: X" then "expr: ..."). Windows are scaled
// like the 1 s intervals of the test: "no progress for 2m" becomes 4 s.
std::map<std::string, std::string> alert_exprs(const std::string& yaml) {
  std::map<std::string, std::string> out;
  std::istringstream in(yaml);
  std::string line, alert;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, std::regex("^\\s*- alert:\\s*(\\S+)\\s*$"))) alert = m[1];
    if (std::regex_match(line, m, std::regex("^\\s*expr:\\s*(.*)$")) && !alert.empty()) {
      out[alert] = std::regex_replace(std::string(m[1]), std::regex("\\[2m\\]"), "[4s]");
    }
  }
  return out;
}

TEST(PrometheusServer, RealSoakFeedsEveryDashboardQueryAndAlert) {
  const fs::path src = fs::path(COLLIE_SOURCE_DIR) / "scripts";
  const fs::path dir = fs::temp_directory_path() / fmt::format("collie_prom_{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir / "targets");
  const std::string stall = (dir / "stall").string();

  ChildProcess soak({COLLIE_CLI_PATH, "perf", "-np", "4",  "--duration", "120s", "-b", "8",  "-e",
                     "32M",           "-f",   "4",   "-w", "0",          "-n",   "1",  "-c", "0",
                     "--debug-port",  "0"},
                    {{"COLLIE_LOG_LEVEL", "info"},
                     {"COLLIE_PERF_TEST_STALL", "2:" + stall},
                     {"COLLIE_ENABLE_TEST_HOOKS", "1"}});
  ChildProcess detail({COLLIE_CLI_PATH, "launch", "-np", "2", "--", COLLIE_DESYNC_JOB},
                      {{"COLLIE_DEBUG", "DETAIL"},
                       {"COLLIE_DEBUG_PORT", "0"},
                       {"COLLIE_LOG_LEVEL", "info"},
                       {"COLLIE_FR_DUMP_DIR", (dir / "dumps").string()}});
  const std::string soak_url = rank0_debug_url(soak);
  ASSERT_FALSE(soak_url.empty()) << soak.err();
  const std::string detail_url = rank0_debug_url(detail);
  ASSERT_FALSE(detail_url.empty()) << detail.err();
  auto both_ready = [&] {
    const std::string out = detail.out();
    return out.find("[0] ready") != std::string::npos && out.find("[1] ready") != std::string::npos;
  };
  for (int i = 0; i < 200 && !both_ready(); ++i) {
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_NE(detail.out().find("[0] ready"), std::string::npos) << detail.out() << detail.err();
  ASSERT_NE(detail.out().find("[1] ready"), std::string::npos) << detail.out() << detail.err();

  // Targets from each running job through the shipped generator.
  const std::string sd = (src / "prometheus/collie_file_sd.py").string();
  for (const auto& [url, file, n] :
       {std::tuple{soak_url, "soak.json", 4u}, std::tuple{detail_url, "detail.json", 2u}}) {
    const fs::path out = dir / "targets" / file;
    ASSERT_EQ(run(fmt::format("python3 {} --from {} -o {}", sd, url, out.string())), 0);
    EXPECT_EQ(Json::parse(read_file(out.string())).size(), n) << read_file(out.string());
  }
  // The shipped config with 1 s intervals so the test needs seconds, not minutes.
  fs::copy_file(src / "prometheus/collie_alerts.yml", dir / "collie_alerts.yml");
  EXPECT_EQ(run(fmt::format("promtool check rules {} > /dev/null",
                            (src / "prometheus/collie_alerts.yml").string())),
            0);
  testing::PrometheusServer prom(src / "prometheus/prometheus.yml", dir);
  EXPECT_TRUE(prom.config_ok());
  auto query = [&](const std::string& q) { return prom.query(q); };
  auto has_data = [&](const std::string& q) {
    const Json j = query(q);
    return !j.is_null() && j["status"] == "success" && !j["data"]["result"].empty();
  };
  // Every target of both jobs scraped.
  bool all_up = false;
  for (int i = 0; i < 60 && !all_up; ++i) {
    const Json j = query("count(up == 1)");
    all_up =
        !j.is_null() && !j["data"]["result"].empty() && j["data"]["result"][0]["value"][1] == "6";
    if (!all_up) std::this_thread::sleep_for(500ms);
  }
  ASSERT_TRUE(all_up) << query("up").dump() << prom.log();

  const Json dash = Json::parse(read_file((src / "grafana/collie.json").string()));
  std::vector<std::string> pending = dashboard_queries(dash);
  const auto alerts = alert_exprs(read_file((src / "prometheus/collie_alerts.yml").string()));
  ASSERT_EQ(alerts.size(), 4u);
  ASSERT_TRUE(alerts.count("CollieRankStalled"));
  for (const auto& [name, expr] : alerts) {
    if (name != "CollieRankStalled") pending.push_back(expr);
  }
  EXPECT_GE(pending.size(), 14u);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!pending.empty() && std::chrono::steady_clock::now() < deadline) {
    std::vector<std::string> still;
    for (const auto& q : pending) {
      if (!has_data(q)) still.push_back(q);
    }
    pending = still;
    if (!pending.empty()) std::this_thread::sleep_for(1s);
  }
  for (const auto& q : pending) ADD_FAILURE() << "no data for: " << q;
  // The dashboard's template variables (Grafana label_values(metric, label)).
  for (const auto& v : dash.at("templating").at("list")) {
    if (v.value("type", "") != "query") continue;
    std::smatch m;
    const std::string def = v.at("definition");
    ASSERT_TRUE(std::regex_match(def, m, std::regex("label_values\\((\\w+), (\\w+)\\)"))) << def;
    const Json r =
        prom.get(fmt::format("/api/v1/label/{}/values", m[2].str()), {{"match[]", m[1].str()}});
    ASSERT_FALSE(r.is_null());
    const Json values = r["data"];
    EXPECT_FALSE(values.empty()) << def;
  }

  // A real stall: rank 2 stays out of its next row, ranks 0, 1 and 3 wait in its first
  // collective. The stalled-rank alert must name exactly the waiting ranks of the soak.
  std::ofstream(stall) << "stall\n";
  Json stalled;
  std::set<std::string> ranks;
  for (int i = 0; i < 30 && ranks != std::set<std::string>{"0", "1", "3"}; ++i) {
    std::this_thread::sleep_for(1s);
    stalled = query(alerts.at("CollieRankStalled"));
    ranks.clear();
    for (const auto& s : stalled["data"]["result"]) ranks.insert(s["metric"]["rank"]);
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1", "3"})) << stalled.dump();
  std::set<std::string> soak_targets;
  for (const auto& g : Json::parse(read_file((dir / "targets/soak.json").string()))) {
    soak_targets.insert(g["targets"][0].get<std::string>());
  }
  for (const auto& s : stalled["data"]["result"]) {
    EXPECT_TRUE(soak_targets.count(s["metric"]["instance"])) << s.dump();
  }
  fs::remove(stall);

  // A live soak rank's exposition passes promtool.
  httplib::Client rank0(soak_url);
  auto m = rank0.Get("/metrics");
  ASSERT_TRUE(m && m->status == 200);
  std::ofstream(dir / "metrics.txt") << m->body;
  EXPECT_EQ(run(fmt::format("promtool check metrics < {} > {} 2>&1", (dir / "metrics.txt").string(),
                            (dir / "promtool.txt").string())),
            0);
  EXPECT_EQ(read_file((dir / "promtool.txt").string()), "");

  soak.signal(SIGTERM);
  EXPECT_EQ(soak.wait(30s), std::optional<int>(143)) << soak.err();
  detail.signal(SIGTERM);
  prom.stop();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace collie
