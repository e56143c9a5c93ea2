#include "debug_server/server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <httplib.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"
#include "debug/dump_service.h"
#include "debug/flight_recorder.h"
#include "debug_server/cluster.h"
#include "debug_server/stacks.h"
#include "debug_server/status_json.h"
#include "metrics/live_status.h"
#include "metrics/metrics.h"
#include "store/store.h"

namespace collie {
namespace {

constexpr const char* kJson = "application/json";
constexpr size_t kMaxPayload = 64 * 1024;
constexpr int kMaxFanoutMs = 60000;

void send_json(httplib::Response& res, const nlohmann::json& j, int status = 200) {
  res.status = status;
  res.set_content(j.dump(2) + "\n", kJson);
}

void send_error(httplib::Response& res, int status, const std::string& msg) {
  send_json(res, {{"error", msg}}, status);
}

// Parses an optional integer query parameter within [lo, hi]; on a bad value answers 400 and
// returns false.
bool int_param(const httplib::Request& req, httplib::Response& res, const char* name, long lo,
               long hi, long* value) {
  if (!req.has_param(name)) return true;
  const std::string s = req.get_param_value(name);
  try {
    size_t used = 0;
    const long v = std::stol(s, &used);
    if (used == s.size() && v >= lo && v <= hi) {
      *value = v;
      return true;
    }
  } catch (const std::exception&) {
  }
  send_error(res, 400,
             fmt::format("query parameter {}={} is not an integer in [{}, {}]", name, s, lo, hi));
  return false;
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  if (inet_pton(AF_INET, host.c_str(), &a) != 1) return false;
  return (ntohl(a.s_addr) >> 24) == 127;
}

DebugServer::DebugServer(DebugServerOptions opts)
    : opts_(std::move(opts)), http_(std::make_unique<httplib::Server>()) {}

DebugServer::~DebugServer() { stop(); }

std::unique_ptr<DebugServer> DebugServer::start(DebugServerOptions opts) {
  if (!is_loopback_host(opts.bind_host) && opts.token.empty()) {
    throw InvalidArgument(fmt::format(
        "[Rank {}] debug server: refusing to bind {} without a token; set COLLIE_DEBUG_TOKEN "
        "(clients then send 'Authorization: Bearer <token>') or bind 127.0.0.1",
        opts.rank, opts.bind_host));
  }
  if (opts.base_port < 0 || opts.base_port + opts.local_rank > 65535) {
    throw InvalidArgument(fmt::format(
        "[Rank {}] debug server: port {} + local rank {} is not a valid TCP port; use 0 for an "
        "ephemeral port",
        opts.rank, opts.base_port, opts.local_rank));
  }
  if (opts.threads < 1) opts.threads = 1;
  std::unique_ptr<DebugServer> s(new DebugServer(std::move(opts)));
  s->install_routes();
  httplib::Server& h = *s->http_;
  const int threads = s->opts_.threads;
  h.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  h.set_read_timeout(s->opts_.io_timeout);
  h.set_write_timeout(s->opts_.io_timeout);
  h.set_keep_alive_timeout(2);
  h.set_keep_alive_max_count(20);
  h.set_payload_max_length(kMaxPayload);
  const std::string& host = s->opts_.bind_host;
  if (s->opts_.base_port == 0) {
    s->port_ = h.bind_to_any_port(host);
  } else {
    const int port = s->opts_.base_port + s->opts_.local_rank;
    s->port_ = h.bind_to_port(host, port) ? port : -1;
  }
  if (s->port_ <= 0) {
    throw NetworkError(
        fmt::format("[Rank {}] debug server: cannot listen on {}:{} (in use?); choose another "
                    "COLLIE_DEBUG_PORT or 0 for an ephemeral port",
                    s->opts_.rank, host, s->opts_.base_port + s->opts_.local_rank));
  }
  // A wildcard bind is reached through this host's name; loopback through its address.
  const std::string public_host = (host == "0.0.0.0" || host == "::") ? host_name() : host;
  s->url_ = fmt::format("http://{}:{}", public_host, s->port_);
  s->listener_ = std::thread([srv = s.get()] { srv->http_->listen_after_bind(); });
  // httplib's stop() is a no-op until the accept loop runs; wait for it so stop() cannot race.
  for (int i = 0; i < 5000 && !h.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (s->opts_.store) {
    s->opts_.store->set(fmt::format("debug_server/{}", s->opts_.rank), s->url_);
  }
  log(LogLevel::Info, "debug server for rank {} at {}", s->opts_.rank, s->url_);
  return s;
}

void DebugServer::stop() {
  if (http_) http_->stop();
  if (listener_.joinable()) listener_.join();
}

void DebugServer::install_routes() {
  httplib::Server& h = *http_;
  Metrics& metrics = opts_.metrics ? *opts_.metrics : Metrics::global();
  const LiveStatus& live = opts_.live ? *opts_.live : LiveStatus::global();

  h.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (opts_.token.empty() || req.path == "/healthz") {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    if (req.get_header_value("Authorization") == "Bearer " + opts_.token) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    res.set_header("WWW-Authenticate", "Bearer");
    send_error(res, 401, "missing or wrong bearer token (see COLLIE_DEBUG_TOKEN)");
    return httplib::Server::HandlerResponse::Handled;
  });
  h.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404) {
      send_error(res, 404,
                 fmt::format("no endpoint {} {}; try /, /healthz, /v1/status, /v1/config, "
                             "/v1/flight_recorder, /v1/stacks, /metrics, /v1/cluster/status, "
                             "/v1/cluster/analyze, POST /v1/dump",
                             req.method, req.path));
    } else {
      send_error(res, res.status, fmt::format("request rejected (HTTP {})", res.status));
    }
  });
  h.set_exception_handler(
      [this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        send_error(res, 500, fmt::format("[Rank {}] {} failed: {}", opts_.rank, req.path, what));
      });

  h.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  h.Get("/v1/status", [this, &live](const httplib::Request&, httplib::Response& res) {
    send_json(res, status_json(opts_, live, url_));
  });
  h.Get("/v1/config", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, config_json(opts_));
  });
  h.Get("/v1/flight_recorder", [this](const httplib::Request& req, httplib::Response& res) {
    long entries = 1 << 30;
    if (!int_param(req, res, "entries", 1, 1 << 30, &entries)) return;
    res.set_content(flight_recorder_json(static_cast<size_t>(entries)), kJson);
  });
  h.Get("/v1/stacks", [this](const httplib::Request& req, httplib::Response& res) {
    long frames = 48;
    if (!int_param(req, res, "max_frames", 1, 64, &frames)) return;
    send_json(res, {{"rank", opts_.rank},
                    {"pid", static_cast<int64_t>(getpid())},
                    {"threads", capture_all_stacks(static_cast<int>(frames))}});
  });
  h.Get("/metrics", [&metrics, &live](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.serialize(&live), "text/plain; version=0.0.4; charset=utf-8");
  });
  h.Post("/v1/dump", [this](const httplib::Request& req, httplib::Response& res) {
    if (!opts_.store) {
      send_error(res, 503, "this rank has no store; dumps cannot be requested");
      return;
    }
    const std::string reason = req.has_param("reason") ? req.get_param_value("reason") : "http";
    const nlohmann::json who = {{"requested_by_rank", opts_.rank},
                                {"reason", reason},
                                {"time_ns", Clock::system().wall_ns()}};
    // dump_request is the counter every rank's DumpService watches (debug/dump_service.h): bump
    // it, never overwrite it. Who asked and why goes next to it, for people reading the store.
    Store& store = opts_.dump_store ? *opts_.dump_store : *opts_.store;
    store.set(std::string(kDumpRequestKey) + "/last", who.dump());
    const int64_t n = store.add(kDumpRequestKey, 1);
    send_json(res,
              {{"dump_requested", true}, {"key", kDumpRequestKey}, {"request", n}, {"by", who}});
  });

  // The cluster view behind /, /v1/cluster/status and /v1/cluster/analyze: fan out, then the
  // shared hang analyzer on the live dumps.
  auto cluster = [this, &live](const httplib::Request& req, httplib::Response& res,
                               ClusterView* view, Analysis* analysis) {
    long timeout_ms = opts_.fanout_timeout.count();
    long stall_ms = static_cast<long>(opts_.stall_after_s * 1000);
    if (!int_param(req, res, "timeout_ms", 1, kMaxFanoutMs, &timeout_ms)) return false;
    if (!int_param(req, res, "stall_ms", 0, 86400000, &stall_ms)) return false;
    if (!opts_.store) {
      send_error(res, 503, "this rank has no store; the cluster view needs rank addresses");
      return false;
    }
    const SelfData self{opts_.rank, status_json(opts_, live, url_),
                        flight_recorder_json(kClusterViewEntries)};
    *view = fetch_cluster(*opts_.store, opts_.world_size, Millis(timeout_ms), opts_.token, &self);
    *analysis = analyze_cluster(*view, stall_ms / 1000.0);
    return true;
  };
  h.Get("/v1/cluster/status", [cluster](const httplib::Request& req, httplib::Response& res) {
    ClusterView v;
    Analysis a;
    if (cluster(req, res, &v, &a)) send_json(res, cluster_json(v, a));
  });
  h.Get("/v1/cluster/analyze", [cluster](const httplib::Request& req, httplib::Response& res) {
    ClusterView v;
    Analysis a;
    if (cluster(req, res, &v, &a)) send_json(res, to_json_value(a));
  });
  h.Get("/", [this, cluster](const httplib::Request& req, httplib::Response& res) {
    ClusterView v;
    Analysis a;
    long refresh = 2000;
    if (!int_param(req, res, "refresh_ms", 200, 600000, &refresh)) return;
    if (cluster(req, res, &v, &a)) {
      res.set_content(render_cluster_page(v, a, opts_.rank, static_cast<int>(refresh)),
                      "text/html; charset=utf-8");
    }
  });
}

std::string DebugServer::flight_recorder_json(size_t max_entries) const {
  return opts_.flight_recorder_json
             ? opts_.flight_recorder_json(max_entries)
             : FlightRecorder::global().dump_json(opts_.rank, "debug server request", max_entries);
}

}  // namespace collie
