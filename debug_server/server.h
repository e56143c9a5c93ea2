#pragma once
// DebugServer: one HTTP server per rank (debug_server/http_server.h) serving live status, flight
// recorder, thread stacks, config, Prometheus /metrics (NCCL Inspector-compatible series at
// /metrics/inspector), a dump trigger, its node of the live-status tree (/v1/tree/status,
// live_tree.h), and a cluster view: the tree's summary of the world, plus the status and flight
// recorder of the ranks it names (of every rank in a small world), addresses from the store
// key debug_server/<rank>.
//
// Safety: binds 127.0.0.1 unless told otherwise; any other address requires a bearer token
// (start() throws InvalidArgument without one). Every request's Host must be one of this
// server's names (an IP literal, localhost, its bound address, this host's name, or
// allowed_hosts), else 421: a DNS-rebinding page cannot reach it. State-changing requests
// (POST) need the bearer token or the header `X-Collie-Request: 1`, which a cross-site form
// cannot send. Requests are read by one I/O thread under a total deadline (io_timeout) and
// served by a small bounded pool that reads only lock-free snapshots, so slow or many clients
// never starve /healthz or block the rank's collectives.
// Ownership: the server shares ownership of the store; REQUIRES: metrics and live outlive it.
// Thread safety: start/stop from one thread; handlers run on the pool.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/timeout.h"

namespace collie::http {
class Server;
}

namespace collie {

class Store;
class TreeAddressResolver;
class Metrics;
class LiveStatus;
class InspectorMetrics;

struct DebugServerOptions {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string bind_host = "127.0.0.1";
  // Base port: the server listens on base + local_rank; 0 picks an ephemeral port.
  int base_port = 0;
  std::string token;  // required (bearer) when bind_host is not a loopback address
  std::string backend;
  Millis group_timeout = kDefaultTimeout;
  // Root (unprefixed) store: debug_server/<rank> addresses. May be null (then no publishing, no
  // cluster view, no dump trigger).
  std::shared_ptr<Store> store;
  // The world group's store, whose dump_request counter every rank's DumpService watches
  // (POST /v1/dump bumps it); null = `store`.
  std::shared_ptr<Store> dump_store;
  Metrics* metrics = nullptr;             // null = Metrics::global()
  const LiveStatus* live = nullptr;       // null = LiveStatus::global()
  InspectorMetrics* inspector = nullptr;  // /metrics/inspector; null = InspectorMetrics::global()
  // Flight-recorder dump as JSON, newest `max_entries` entries; unset = FlightRecorder::global()'s.
  std::function<std::string(size_t max_entries)> flight_recorder_json;
  // Cluster view: per level of the live-status tree (live_tree.h), and per rank for the ranks
  // whose status and flight recorder it fetches.
  Millis fanout_timeout = std::chrono::milliseconds(2000);
  // Cluster view: ranks must have waited this long in an op before it counts as a problem
  // (stalled op, collective not every rank joined); younger differences are normal skew.
  double stall_after_s = 10.0;
  int threads = 4;
  // Whole-request read deadline and response write timeout (slow clients).
  std::chrono::seconds io_timeout{3};
  // Extra names this server may be reached by (Host header), e.g. a DNS alias or FQDN
  // (COLLIE_DEBUG_ALLOWED_HOSTS, comma-separated).
  std::vector<std::string> allowed_hosts;
};

class DebugServer {
 public:
  // Binds and starts serving, then publishes url() under debug_server/<rank>.
  // Throws InvalidArgument (non-loopback without token, bad port) or NetworkError (bind failed,
  // naming the address and suggesting another port).
  static std::unique_ptr<DebugServer> start(DebugServerOptions opts);
  ~DebugServer();
  DebugServer(const DebugServer&) = delete;
  DebugServer& operator=(const DebugServer&) = delete;

  int port() const { return port_; }
  const std::string& url() const { return url_; }  // "http://host:port"
  const DebugServerOptions& options() const { return opts_; }
  // Stops accepting and joins the listener (idempotent).
  void stop();

 private:
  explicit DebugServer(DebugServerOptions opts);
  void install_routes();  // the ones below, in this order
  void install_request_checks();
  void install_error_handler();
  void install_rank_routes();
  void install_dump_route();
  void install_cluster_routes();
  void install_tree_route();
  std::string flight_recorder_json(size_t max_entries) const;
  DebugServerOptions opts_;
  bool host_allowed(const std::string& host_header) const;
  std::unique_ptr<http::Server> http_;
  // Reads the addresses this rank's tree node asks (started once the address is published).
  std::unique_ptr<TreeAddressResolver> resolver_;
  int port_ = 0;
  std::string url_;
};

bool is_loopback_host(const std::string& host);

// The host part of a Host header value ("name:port", "[v6]:port", "name"), lowercased.
std::string host_of_header(const std::string& host_header);

}  // namespace collie
