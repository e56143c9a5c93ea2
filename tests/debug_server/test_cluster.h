#pragma once
// Ranks as threads: each "rank" has its own Metrics, LiveStatus, observer and DebugServer on
// an ephemeral loopback port, all sharing one HashStore (the control plane). Ops are fed to the
// real observer, the way the tracing layer does.
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "debug_server/server.h"
#include "metrics/live_status.h"
#include "metrics/metrics.h"
#include "metrics/metrics_observer.h"
#include "metrics/metrics_prom_events.h"
#include "store/hash_store.h"

namespace collie::testing {

struct TestRank {
  TestRank(int rank, int world) { init_trace(group, rank, world); }
  GroupTrace group;
  Metrics metrics;
  LiveStatus live;
  MetricsObserver observer{metrics, live};
  std::unique_ptr<DebugServer> server;
};

class TestCluster {
 public:
  explicit TestCluster(int world, DebugServerOptions base = {})
      : store_(std::make_shared<HashStore>(std::chrono::seconds(5))) {
    for (int r = 0; r < world; ++r) {
      auto t = std::make_unique<TestRank>(r, world);
      DebugServerOptions o = base;
      o.rank = r;
      o.world_size = world;
      o.local_rank = r;
      o.backend = "gloo";
      o.store = store_;
      o.metrics = &t->metrics;
      o.live = &t->live;
      t->server = DebugServer::start(o);
      ranks_.push_back(std::move(t));
    }
  }

  // Every rank starts and completes `n` all_reduces of `numel` floats.
  void run_collectives(int n, size_t numel = 256) {
    for (int i = 0; i < n; ++i) {
      ++seq_;
      for (auto& t : ranks_) {
        trace_scheduled(t->observer, t->group, OpType::AllReduce, seq_, numel * 4);
        trace_completed(t->observer, t->group, OpType::AllReduce, seq_, numel * 4,
                        std::chrono::microseconds(40 + 10 * i));
      }
    }
  }

  // The next all_reduce is started by every rank except `absent`, and completes nowhere.
  void hang_next(int absent) {
    ++seq_;
    for (auto& t : ranks_) {
      if (t->group.rank == absent) continue;
      trace_scheduled(t->observer, t->group, OpType::AllReduce, seq_, 1024);
    }
  }

  TestRank& rank(int r) { return *ranks_.at(r); }
  int port(int r) { return ranks_.at(r)->server->port(); }
  Store& store() { return *store_; }
  uint64_t seq() const { return seq_; }

 private:
  std::shared_ptr<HashStore> store_;
  std::vector<std::unique_ptr<TestRank>> ranks_;
  uint64_t seq_ = 0;
};

inline httplib::Result http_get(int port, const std::string& path, int timeout_s = 10) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(timeout_s, 0);
  cli.set_read_timeout(timeout_s, 0);
  return cli.Get(path.c_str());
}

}  // namespace collie::testing
