#pragma once
// Ranks as threads: each "rank" has its own flight recorder, Metrics, LiveStatus, observer and
// DebugServer on an ephemeral loopback port, all sharing one store (the control plane: a
// HashStore unless the test gives another). Ops
// are fed to the real recorder and observer the way the tracing layer does (record, then
// started, then completed), so the cluster view analyzes real dumps.
#include <httplib.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "debug/flight_recorder.h"
#include "debug/rank_ranges.h"
#include "debug_server/server.h"
#include "metrics/live_status.h"
#include "metrics/metrics.h"
#include "metrics/metrics_observer.h"
#include "metrics/metrics_prom_events.h"
#include "store/hash_store.h"

namespace collie::testing {

struct TestRank {
  TestRank(int rank, int world) {
    init_trace(*group, rank, world);
    fr.add_group(group);
  }
  std::shared_ptr<GroupTrace> group = std::make_shared<GroupTrace>();
  FlightRecorder fr{256};
  Metrics metrics;
  LiveStatus live;
  MetricsObserver observer{metrics, live};
  std::unique_ptr<DebugServer> server;
  std::map<uint64_t, uint64_t> records;  // seq -> flight-recorder record id

  void start(OpType op, uint64_t seq, size_t numel) {
    OpCall c;
    c.type = op;
    c.input = TensorView::cpu(nullptr, numel, DType::Float32);
    c.output = c.input;
    c.seq = seq;
    c.timeout = Millis(1000);
    records[seq] = fr.record(*group, seq, c);
    trace_scheduled(observer, *group, op, seq, numel * 4);
    fr.mark_started(records[seq]);
  }
  void complete(OpType op, uint64_t seq, size_t numel, std::chrono::nanoseconds took) {
    trace_completed(observer, *group, op, seq, numel * 4, took);
    fr.mark_completed(records[seq], false);
  }
};

class TestCluster {
 public:
  explicit TestCluster(
      int world, DebugServerOptions base = {},
      std::shared_ptr<Store> store = std::make_shared<HashStore>(std::chrono::seconds(5)))
      : store_(std::move(store)) {
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
      if (!o.flight_recorder_json) {
        o.flight_recorder_json = [fr = &t->fr, r](size_t n) { return fr->dump_json(r, "test", n); };
      }
      t->server = DebugServer::start(o);
      ranks_.push_back(std::move(t));
    }
  }

  // Every rank starts and completes `n` all_reduces of `numel` floats.
  void run_collectives(int n, size_t numel = 256) {
    for (int i = 0; i < n; ++i) {
      ++seq_;
      for (auto& t : ranks_) {
        t->start(OpType::AllReduce, seq_, numel);
        t->complete(OpType::AllReduce, seq_, numel, std::chrono::microseconds(40 + 10 * i));
      }
    }
  }

  // The next all_reduce is started by every rank except `absent`, and completes nowhere.
  void hang_next(int absent) {
    ++seq_;
    for (auto& t : ranks_) {
      if (t->group->rank == absent) continue;
      t->start(OpType::AllReduce, seq_, 256);
    }
  }

  TestRank& rank(int r) { return *ranks_.at(r); }
  int port(int r) { return ranks_.at(r)->server->port(); }
  Store& store() { return *store_; }
  uint64_t seq() const { return seq_; }

 private:
  std::shared_ptr<Store> store_;
  std::vector<std::unique_ptr<TestRank>> ranks_;
  uint64_t seq_ = 0;
};

inline httplib::Result http_get(int port, const std::string& path, int timeout_s = 10) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(timeout_s, 0);
  cli.set_read_timeout(timeout_s, 0);
  return cli.Get(path.c_str());
}

// The state `rank` has in a `collie.analyze.v2` analysis (its "states": each state's ranks as
// ranges): "ok" when no state lists it.
inline std::string analysis_state(const nlohmann::json& analysis, int rank) {
  for (const auto& s : analysis.at("states")) {
    for (int r : parse_rank_ranges(s.at("ranks").get<std::string>(), 1 << 24, 1 << 24)) {
      if (r == rank) return s.at("state").get<std::string>();
    }
  }
  return "ok";
}

}  // namespace collie::testing
