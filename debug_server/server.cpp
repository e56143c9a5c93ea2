#include "debug_server/server.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"
#include "debug/dump_service.h"
#include "debug/flight_recorder.h"
#include "debug_server/cluster.h"
#include "debug_server/http_server.h"
#include "debug_server/live_tree.h"
#include "debug_server/stacks.h"
#include "debug_server/status_json.h"
#include "metrics/inspector_metrics.h"
#include "metrics/live_status.h"
#include "metrics/metrics.h"
#include "store/store.h"
#include "store/store_secret.h"

namespace collie {
namespace {

constexpr const char* kJson = "application/json";
constexpr size_t kMaxPayload = 64 * 1024;
constexpr int kMaxFanoutMs = 60000;

void send_json(http::Response& res, const nlohmann::json& j, int status = 200) {
  res.status = status;
  res.set_content(j.dump(2) + "\n", kJson);
}

void send_error(http::Response& res, int status, const std::string& msg) {
  send_json(res, {{"error", msg}}, status);
}

// Parses an optional integer query parameter within [lo, hi]; on a bad value answers 400 and
// returns false.
bool int_param(const http::ServerRequest& req, http::Response& res, const char* name, long lo,
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

bool is_ip_literal(const std::string& host) {
  in_addr a4{};
  in6_addr a6{};
  return inet_pton(AF_INET, host.c_str(), &a4) == 1 || inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

}  // namespace

std::string host_of_header(const std::string& host_header) {
  std::string h = host_header;
  for (char& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!h.empty() && h.front() == '[') {
    const size_t close = h.find(']');
    return close == std::string::npos ? h : h.substr(1, close - 1);
  }
  const size_t colon = h.find(':');
  if (colon != std::string::npos && h.find(':', colon + 1) == std::string::npos) {
    h.resize(colon);
  }
  if (!h.empty() && h.back() == '.') h.pop_back();  // "localhost." is localhost
  return h;
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  if (inet_pton(AF_INET, host.c_str(), &a) != 1) return false;
  return (ntohl(a.s_addr) >> 24) == 127;
}

DebugServer::DebugServer(DebugServerOptions opts) : opts_(std::move(opts)) {
  http::ServerOptions h;
  h.threads = std::max(1, opts_.threads);
  h.request_timeout = opts_.io_timeout;
  h.write_timeout = opts_.io_timeout;
  h.max_body = kMaxPayload;
  http_ = std::make_unique<http::Server>(h);
}

// DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1 reaches us with
// "Host: evil.example". IP literals cannot be rebound, so they pass; names must be ours.
bool DebugServer::host_allowed(const std::string& host_header) const {
  if (host_header.empty()) return true;  // HTTP/1.0 without Host: not a browser
  const std::string h = host_of_header(host_header);
  if (h.empty()) return false;
  if (h == "localhost" || is_ip_literal(h)) return true;
  auto same = [&h](const std::string& name) { return !name.empty() && host_of_header(name) == h; };
  if (same(opts_.bind_host) || same(host_name())) return true;
  return std::any_of(opts_.allowed_hosts.begin(), opts_.allowed_hosts.end(), same);
}

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
  const std::string& host = s->opts_.bind_host;
  s->port_ =
      s->http_->bind(host, s->opts_.base_port == 0 ? 0 : s->opts_.base_port + s->opts_.local_rank);
  if (s->port_ <= 0) {
    throw NetworkError(
        fmt::format("[Rank {}] debug server: cannot listen on {}:{} (in use?); choose another "
                    "COLLIE_DEBUG_PORT or 0 for an ephemeral port",
                    s->opts_.rank, host, s->opts_.base_port + s->opts_.local_rank));
  }
  // A wildcard bind is reached through this host's name; loopback through its address.
  const std::string public_host = (host == "0.0.0.0" || host == "::") ? host_name() : host;
  // An IPv6 literal in brackets, the form is_member_url (debug_server/cluster.h) accepts.
  s->url_ = public_host.find(':') != std::string::npos
                ? fmt::format("http://[{}]:{}", public_host, s->port_)
                : fmt::format("http://{}:{}", public_host, s->port_);
  s->http_->start();
  if (s->opts_.store) {
    s->opts_.store->set(fmt::format("debug_server/{}", s->opts_.rank), s->url_);
    // The addresses its tree node will ask, read now, not while a query waits.
    if (s->opts_.world_size > 1) {
      try {
        s->resolver_ = std::make_unique<TreeAddressResolver>(s->opts_.store->clone(), s->opts_.rank,
                                                             s->opts_.world_size);
      } catch (const std::exception& e) {
        log(LogLevel::Warning,
            "debug server for rank {}: its live-status tree node cannot read addresses ({}); "
            "the ranks below it will show as not reached",
            s->opts_.rank, e.what());
      }
    }
  }
  log(LogLevel::Info, "debug server for rank {} at {}", s->opts_.rank, s->url_);
  return s;
}

void DebugServer::stop() {
  if (http_) http_->stop();  // first: its handlers use the resolver
  if (resolver_) resolver_->stop();
}

void DebugServer::install_routes() {
  install_request_checks();
  install_error_handler();
  install_rank_routes();
  install_dump_route();
  install_tree_route();
  install_cluster_routes();
}

// Every request first: Host allow-list (DNS rebinding), bearer token, and the custom header a
// cross-site form cannot send for state-changing methods.
void DebugServer::install_request_checks() {
  http_->set_filter([this](const http::ServerRequest& req, http::Response& res) {
    if (!host_allowed(req.get_header_value("Host"))) {
      send_error(res, 421,
                 fmt::format("Host '{}' is not a name of this debug server (DNS rebinding?); "
                             "use its address, localhost or {}, or add the name to "
                             "COLLIE_DEBUG_ALLOWED_HOSTS",
                             req.get_header_value("Host"), host_name()));
      return true;
    }
    const bool token_ok =
        !opts_.token.empty() &&
        constant_time_equal("Bearer " + opts_.token, req.get_header_value("Authorization"));
    if (!opts_.token.empty() && req.path != "/healthz" && !token_ok) {
      res.set_header("WWW-Authenticate", "Bearer");
      send_error(res, 401, "missing or wrong bearer token (see COLLIE_DEBUG_TOKEN)");
      return true;
    }
    // A cross-site HTML form can POST here but cannot add a custom header or a bearer token.
    if (req.method != "GET" && req.method != "HEAD" && !token_ok &&
        req.get_header_value("X-Collie-Request") != "1") {
      send_error(res, 403,
                 fmt::format("{} {} changes state and needs the header 'X-Collie-Request: 1' "
                             "(or the bearer token); e.g. curl -X POST -H 'X-Collie-Request: 1' "
                             "...",
                             req.method, req.path));
      return true;
    }
    return false;
  });
}

// One JSON error body for every failure, and a 404 that lists the endpoints.
void DebugServer::install_error_handler() {
  http_->set_error_handler(
      [this](const http::ServerRequest& req, http::Response& res, const std::string& why) {
        if (!res.body.empty()) return;
        if (res.status == 500) {
          send_error(res, 500, fmt::format("[Rank {}] {} failed: {}", opts_.rank, req.path, why));
        } else if (!why.empty()) {
          send_error(res, res.status, why);
        } else if (res.status == 404) {
          send_error(res, 404,
                     fmt::format("no endpoint {} {}; try /, /healthz, /v1/status, /v1/config, "
                                 "/v1/flight_recorder, /v1/stacks, /metrics, /metrics/inspector, "
                                 "/v1/cluster/status, /v1/cluster/analyze, /v1/tree/status, "
                                 "POST /v1/dump",
                                 req.method, req.path));
        } else {
          send_error(res, res.status, fmt::format("request rejected (HTTP {})", res.status));
        }
      });
}

// This rank's own state: health, status, config, flight recorder, stacks, metrics.
void DebugServer::install_rank_routes() {
  http::Server& h = *http_;
  Metrics& metrics = opts_.metrics ? *opts_.metrics : Metrics::global();
  const LiveStatus& live = opts_.live ? *opts_.live : LiveStatus::global();
  InspectorMetrics& inspector = opts_.inspector ? *opts_.inspector : InspectorMetrics::global();
  // Built before this server, so exit handlers destroy it only after the server has stopped
  // (the process-wide singletons above are never destroyed).
  if (!opts_.flight_recorder_json) (void)FlightRecorder::global();
  h.route("GET", "/healthz", [](const http::ServerRequest&, http::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  h.route("GET", "/v1/status", [this, &live](const http::ServerRequest&, http::Response& res) {
    send_json(res, status_json(opts_, live, url_));
  });
  h.route("GET", "/v1/config", [this](const http::ServerRequest&, http::Response& res) {
    send_json(res, config_json(opts_));
  });
  h.route("GET", "/v1/flight_recorder",
          [this](const http::ServerRequest& req, http::Response& res) {
            long entries = 1 << 30;
            if (!int_param(req, res, "entries", 1, 1 << 30, &entries)) return;
            res.set_content(flight_recorder_json(static_cast<size_t>(entries)), kJson);
          });
  h.route("GET", "/v1/stacks", [this](const http::ServerRequest& req, http::Response& res) {
    long frames = 48;
    if (!int_param(req, res, "max_frames", 1, 64, &frames)) return;
    send_json(res, {{"rank", opts_.rank},
                    {"pid", static_cast<int64_t>(getpid())},
                    {"threads", capture_all_stacks(static_cast<int>(frames))}});
  });
  h.route("GET", "/metrics", [&metrics, &live](const http::ServerRequest&, http::Response& res) {
    res.set_content(metrics.serialize(&live), "text/plain; version=0.0.4; charset=utf-8");
  });
  h.route("GET", "/metrics/inspector",
          [&inspector](const http::ServerRequest&, http::Response& res) {
            res.set_content(inspector.serialize(), "text/plain; version=0.0.4; charset=utf-8");
          });
}

// POST /v1/dump: asks every rank's DumpService for a flight-recorder dump through the store.
void DebugServer::install_dump_route() {
  http_->route("POST", "/v1/dump", [this](const http::ServerRequest& req, http::Response& res) {
    if (!opts_.store) {
      send_error(res, 503, "this rank has no store; dumps cannot be requested");
      return;
    }
    const std::string reason = req.has_param("reason") ? req.get_param_value("reason") : "http";
    const nlohmann::json who = {{"requested_by_rank", opts_.rank},
                                {"reason", reason},
                                {"time_ns", Clock::system().wall_ns()}};
    // dump_request is the counter every rank's DumpService watches (debug/dump_service.h):
    // request_cluster_dump bumps it (never overwrites it) and sets the key that wakes the
    // watchers. Who asked and why goes next to it, for people reading the store.
    Store& store = opts_.dump_store ? *opts_.dump_store : *opts_.store;
    store.set(std::string(kDumpRequestKey) + "/last", who.dump());
    const int64_t n = request_cluster_dump(store);
    send_json(res,
              {{"dump_requested", true}, {"key", kDumpRequestKey}, {"request", n}, {"by", who}});
  });
}

// GET /v1/tree/status?rank=R&world=N&level_ms=L: this rank's node of the live-status tree
// (live_tree.h): its own status merged with its subtree's, as a LiveSummary. `rank` and `world`
// say what the asker expects, so a stale or planted address cannot answer for another rank.
void DebugServer::install_tree_route() {
  const LiveStatus& live = opts_.live ? *opts_.live : LiveStatus::global();
  http_->route(
      "GET", "/v1/tree/status", [this, &live](const http::ServerRequest& req, http::Response& res) {
        long rank = -1, world = -1, level_ms = opts_.fanout_timeout.count();
        if (!int_param(req, res, "rank", 0, INT32_MAX, &rank)) return;
        if (!int_param(req, res, "world", 1, INT32_MAX, &world)) return;
        if (!int_param(req, res, "level_ms", 1, kMaxFanoutMs, &level_ms)) return;
        if (rank != opts_.rank || world != opts_.world_size) {
          send_error(res, 409,
                     fmt::format("this is rank {} of {}, not rank {} of {} (a stale "
                                 "address in the store?)",
                                 opts_.rank, opts_.world_size, rank, world));
          return;
        }
        LiveSummary local =
            local_summary(opts_.rank, opts_.world_size, host_name(), live.snapshot());
        NoAddresses none;
        AddressSource& addrs = resolver_ ? static_cast<AddressSource&>(*resolver_) : none;
        TreeQueryOptions o;
        if (opts_.store) {
          o = tree_options(*opts_.store, opts_.world_size, Millis(level_ms), opts_.token);
        }
        o.world_size = opts_.world_size;
        o.level = Millis(level_ms);
        o.asker_fd = req.fd;  // the parent gave up: so does this node's subtree
        TreeQuery q(tree_span_of(opts_.rank, opts_.world_size), std::move(local), addrs, o);
        res.status = 200;
        res.set_content(summary_json(run_tree_query(q)).dump() + "\n", kJson);
      });
}

// The cluster view behind /, /v1/cluster/status and /v1/cluster/analyze: the live-status tree's
// summary of the world, then the ranks it names (every rank of a small world, with the hang
// analyzer on their flight recorders).
void DebugServer::install_cluster_routes() {
  http::Server& h = *http_;
  const LiveStatus& live = opts_.live ? *opts_.live : LiveStatus::global();
  auto cluster = [this, &live](const http::ServerRequest& req, http::Response& res,
                               LiveView* view) {
    long timeout_ms = opts_.fanout_timeout.count();
    long stall_ms = static_cast<long>(opts_.stall_after_s * 1000);
    if (!int_param(req, res, "timeout_ms", 1, kMaxFanoutMs, &timeout_ms)) return false;
    if (!int_param(req, res, "stall_ms", 0, 86400000, &stall_ms)) return false;
    if (!opts_.store) {
      send_error(res, 503, "this rank has no store; the cluster view needs rank addresses");
      return false;
    }
    const SelfData self{opts_.rank, status_json(opts_, live, url_),
                        opts_.world_size <= kFullViewRanks
                            ? flight_recorder_json(kClusterViewEntries)
                            : std::string()};
    TreeQueryOptions o =
        tree_options(*opts_.store, opts_.world_size, Millis(timeout_ms), opts_.token);
    o.asker_fd = req.fd;  // a browser that left: the tree's asks end
    // Rank 0 is the tree's root: it answers with its own node. Any other rank asks rank 0,
    // reading the addresses it needs from the store before the deadlines start.
    StoreAddresses store_addrs(opts_.store);
    std::optional<LiveSummary> local;
    AddressSource* addrs = &store_addrs;
    if (opts_.rank == 0) {
      local = local_summary(0, opts_.world_size, host_name(), live.snapshot());
      if (resolver_) addrs = resolver_.get();
    }
    TreeQuery q({0, opts_.world_size}, std::move(local), *addrs, o);
    *view = live_view(*opts_.store, q, opts_.world_size, Millis(timeout_ms), stall_ms / 1000.0,
                      opts_.token, &self);
    return true;
  };
  h.route("GET", "/v1/cluster/status",
          [cluster](const http::ServerRequest& req, http::Response& res) {
            LiveView v;
            if (cluster(req, res, &v)) send_json(res, cluster_json(v));
          });
  h.route(
      "GET", "/v1/cluster/analyze", [cluster](const http::ServerRequest& req, http::Response& res) {
        LiveView v;
        if (!cluster(req, res, &v)) return;
        // The analyzer's report where every rank's flight recorder was read; the live
        // verdicts otherwise.
        send_json(res, v.analysis ? to_json_value(*v.analysis) : live_json(v.report, v.summary));
      });
  h.route("GET", "/", [this, cluster](const http::ServerRequest& req, http::Response& res) {
    LiveView v;
    long refresh = 2000;
    if (!int_param(req, res, "refresh_ms", 200, 600000, &refresh)) return;
    if (cluster(req, res, &v)) {
      res.set_content(render_cluster_page(v, opts_.rank, static_cast<int>(refresh)),
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
