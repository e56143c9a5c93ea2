#pragma once
// DebugServer: one HTTP server per rank (cpp-httplib) serving live status, flight recorder,
// thread stacks, config, Prometheus /metrics, a dump trigger, and a cluster view that fans out
// to every rank's server (addresses from the store key debug_server/<rank>).
//
// Safety: binds 127.0.0.1 unless told otherwise; any other address requires a bearer token
// (start() throws InvalidArgument without one). Requests run on a small bounded thread pool with
// read/write timeouts and payload limits, and read only lock-free snapshots, so a bad or slow
// client never blocks the rank's collectives.
// Ownership: the server shares ownership of the store; REQUIRES: metrics and live outlive it.
// Thread safety: start/stop from one thread; handlers run on the pool.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/timeout.h"

namespace httplib {
class Server;
}

namespace collie {

class Store;
class Metrics;
class LiveStatus;

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
  Metrics* metrics = nullptr;        // null = Metrics::global()
  const LiveStatus* live = nullptr;  // null = LiveStatus::global()
  // Flight-recorder dump as JSON, newest `max_entries` entries; unset = FlightRecorder::global()'s.
  std::function<std::string(size_t max_entries)> flight_recorder_json;
  Millis fanout_timeout = std::chrono::milliseconds(2000);  // per rank, cluster view
  // Cluster view: ranks must have waited this long in an op before it counts as a problem
  // (stalled op, collective not every rank joined); younger differences are normal skew.
  double stall_after_s = 10.0;
  int threads = 4;
  std::chrono::seconds io_timeout{3};  // per-connection read/write timeout (slow clients)
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
  void install_routes();
  std::string flight_recorder_json(size_t max_entries) const;
  DebugServerOptions opts_;
  std::unique_ptr<httplib::Server> http_;
  std::thread listener_;
  int port_ = 0;
  std::string url_;
};

bool is_loopback_host(const std::string& host);

}  // namespace collie
