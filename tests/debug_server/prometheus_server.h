#pragma once
// A real Prometheus server (Debian package, /usr/bin/prometheus) for live tests: a shipped
// config from scripts/prometheus with its intervals cut to 1 s, on an ephemeral loopback port,
// asked through its HTTP API. Stopped (SIGTERM) when destroyed.
#include <fmt/format.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "store/socket_util.h"
#include "support/child_process.h"

namespace collie::testing {

class PrometheusServer {
 public:
  // Writes `shipped` (a scripts/prometheus config) into dir/prometheus.yml with 1 s scrape,
  // evaluation and file_sd refresh intervals (1 s scrape timeout) and starts Prometheus on it,
  // its data in dir/data. Check config_ok() before relying on the server.
  PrometheusServer(const std::filesystem::path& shipped, const std::filesystem::path& dir) {
    std::string cfg = read_file(shipped.string());
    cfg =
        std::regex_replace(cfg, std::regex("(scrape|evaluation)_interval: 15s"), "$1_interval: 1s");
    cfg = std::regex_replace(cfg, std::regex("scrape_timeout: 5s"), "scrape_timeout: 1s");
    cfg = std::regex_replace(cfg, std::regex("refresh_interval: 30s"), "refresh_interval: 1s");
    const std::string config = (dir / "prometheus.yml").string();
    std::ofstream(config) << cfg;
    config_ok_ =
        std::system(fmt::format("promtool check config {} > /dev/null", config).c_str()) == 0;
    uint16_t port = 0;
    close(net::listen_on("127.0.0.1", 0, &port));
    process_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{"/usr/bin/prometheus", "--config.file=" + config,
                                 "--storage.tsdb.path=" + (dir / "data").string(),
                                 fmt::format("--web.listen-address=127.0.0.1:{}", port),
                                 "--log.level=warn"},
        std::map<std::string, std::string>{});
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port);
    client_->set_read_timeout(5, 0);
  }
  ~PrometheusServer() { stop(); }
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  bool config_ok() const { return config_ok_; }
  // GET of an API path; null JSON unless HTTP 200.
  nlohmann::json get(const std::string& path, const httplib::Params& params) {
    auto r = client_->Get(path, params, httplib::Headers{});
    if (!r || r->status != 200) return nlohmann::json();
    return nlohmann::json::parse(r->body);
  }
  // An instant query.
  nlohmann::json query(const std::string& q) { return get("/api/v1/query", {{"query", q}}); }
  std::string log() const { return process_->err(); }
  // SIGTERM and wait (at most 10 s); idempotent.
  void stop() {
    if (stopped_) return;
    stopped_ = true;
    process_->signal(SIGTERM);
    process_->wait(std::chrono::seconds(10));
  }

 private:
  bool config_ok_ = false;
  bool stopped_ = false;
  std::unique_ptr<ChildProcess> process_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace collie::testing
