// The probes over real Gloo groups: ranks are threads sharing a HashStore (the control plane),
// data moves over Gloo's TCP transport on 127.0.0.1. Skips when this build has no Gloo backend.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "comm/registry.h"
#include "core/env.h"
#include "probes/accept.h"
#include "probes/connectivity.h"
#include "probes/env_probe.h"
#include "probes/pairwise.h"
#include "probes/stragglers.h"
#include "store/hash_store.h"

namespace collie::probes {
namespace {

constexpr int kRanks = 4;

// Runs fn on kRanks thread-ranks, each with a ProbeContext (no process group: the probes make
// their own groups from the context's store); returns rank 0's result. Fake hostnames put ranks
// 0,1 on "hostA" and 2,3 on "hostB" so host grouping is exercised.
template <class Fn>
auto run_probe_ranks(Fn fn, const Env* env = nullptr)
    -> decltype(fn(std::declval<ProbeContext&>())) {
  if (find_backend("gloo") == nullptr) return {};
  auto store = std::make_shared<HashStore>(std::chrono::seconds(20));
  decltype(fn(std::declval<ProbeContext&>())) result;
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      ProbeContext ctx;
      ctx.store = store;
      ctx.rank = r;
      ctx.world = kRanks;
      ctx.backend = "gloo";
      ctx.timeout = std::chrono::seconds(5);
      ctx.env = env;
      exchange_hosts(ctx, r < 2 ? "hostA" : "hostB");
      auto out = fn(ctx);
      if (r == 0) result = std::move(out);
    });
  }
  for (auto& t : threads) t.join();
  return result;
}

class ProbesOverGloo : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(find_backend("gloo"), nullptr)
        << "gloo is a required backend (cmake/Dependencies.cmake) but is not registered";
  }
};

TEST_F(ProbesOverGloo, ConnectivityAllReachable) {
  const auto r = run_probe_ranks([](ProbeContext& ctx) { return run_connectivity(ctx); });
  EXPECT_TRUE(r.all_reachable()) << r.to_text();
  EXPECT_EQ(r.pair_count, 6);
  EXPECT_GT(r.rtt_min_us, 0) << r.to_text();
  EXPECT_GE(r.rtt_max_us, r.rtt_median_us);
  EXPECT_GE(r.rtt_median_us, r.rtt_min_us);
}

TEST_F(ProbesOverGloo, PairwiseMeasuresEveryDirectedLink) {
  const auto r = run_probe_ranks([](ProbeContext& ctx) {
    PairwiseOptions o;
    o.bytes = 256 << 10;
    o.bw_iters = 3;
    o.lat_iters = 5;
    o.schedule = "full";
    return run_pairwise(ctx, o);
  });
  EXPECT_TRUE(r.errors.empty()) << r.to_text();
  EXPECT_EQ(r.isolation.survey_rounds, 3) << r.to_text();
  EXPECT_EQ(r.units, (std::vector<std::string>{"hostA", "hostB"}));
  EXPECT_EQ(r.bw_gbps.values().size(), 12u) << r.to_text();
  EXPECT_EQ(r.latency_us.values().size(), 12u);
  for (double v : r.bw_gbps.values()) EXPECT_GT(v, 0);
  EXPECT_EQ(r.host_scores().size(), 2u);
  EXPECT_NE(r.to_text().find("bandwidth (GB/s"), std::string::npos);
}

TEST_F(ProbesOverGloo, PairwiseQuickMeasuresHostsThroughTheirFirstRank) {
  const auto r = run_probe_ranks([](ProbeContext& ctx) {
    PairwiseOptions o;
    o.bytes = 256 << 10;
    o.bw_iters = 3;
    o.lat_iters = 5;
    return run_pairwise(ctx, o);
  });
  EXPECT_TRUE(r.errors.empty()) << r.to_text();
  EXPECT_EQ(r.unit_rank, (std::vector<int>{0, 2}));
  EXPECT_EQ(r.isolation.survey_rounds, 1);
  // Only the hosts' first ranks measured, both directions.
  EXPECT_GT(r.bw_gbps.at(0, 2), 0) << r.to_text();
  EXPECT_GT(r.bw_gbps.at(2, 0), 0) << r.to_text();
  EXPECT_EQ(r.bw_gbps.values().size(), 2u) << r.to_text();
  // Two units are each other's only reference: nothing can be named without a floor.
  EXPECT_EQ(r.verdict(), Verdict::Ok) << r.to_text();
  EXPECT_NE(r.to_text().find("OK: nothing named"), std::string::npos) << r.to_text();
}

TEST_F(ProbesOverGloo, PairwiseConfirmsAnAbsoluteFloorWithReMeasurements) {
  // A floor no loopback link reaches: the pair is bad in the survey and in every
  // re-measurement, so it is named (as a link: two units have no known-good partner).
  const auto r = run_probe_ranks([](ProbeContext& ctx) {
    PairwiseOptions o;
    o.bytes = 64 << 10;
    o.bw_iters = 2;
    o.lat_iters = 3;
    o.min_link_gbps = 1e6;
    return run_pairwise(ctx, o);
  });
  ASSERT_EQ(r.isolation.findings.size(), 1u) << r.to_text();
  const auto& f = r.isolation.findings[0];
  EXPECT_EQ(f.fault, Fault::LinkSlow);
  EXPECT_EQ(f.severity, Verdict::Crit);
  EXPECT_EQ(f.confirmations, 2);
  EXPECT_EQ(r.isolation.rounds, 3);
  EXPECT_NE(r.to_text().find("SLOW LINK: hostA (ranks 0, 1) <-> hostB (ranks 2, 3)"),
            std::string::npos)
      << r.to_text();
}

TEST_F(ProbesOverGloo, StragglersNameTheDelayedRank) {
  const auto r = run_probe_ranks([](ProbeContext& ctx) {
    StragglerOptions o;
    o.iters = 15;
    o.warmup = 2;
    o.late_us = 2000;
    o.before_iteration = [](int rank, int) {
      if (rank == 3) std::this_thread::sleep_for(std::chrono::milliseconds(8));
    };
    return run_stragglers(ctx, o);
  });
  EXPECT_TRUE(r.error.empty()) << r.error;
  ASSERT_EQ(r.stragglers().size(), 1u) << r.to_text();
  EXPECT_EQ(r.stragglers()[0].rank, 3);
  EXPECT_EQ(r.stragglers()[0].host, "hostB");
  EXPECT_GT(r.stragglers()[0].median_late_us, 5000);
}

TEST_F(ProbesOverGloo, EnvGathersEveryRank) {
  const auto r = run_probe_ranks([](ProbeContext& ctx) { return run_env(ctx); });
  EXPECT_EQ(r.ranks.size(), static_cast<size_t>(kRanks));
  EXPECT_TRUE(r.missing_ranks.empty());
  // Threads share one process: nothing can differ.
  EXPECT_TRUE(r.inconsistencies.empty()) << r.to_text();
  EXPECT_TRUE(r.ranks[3].count("version.gloo"));
}

TEST_F(ProbesOverGloo, MissingRankIsReportedNotAwaited) {
  // Rank 3 never shows up: the others must finish within their deadlines and name it.
  auto store = std::make_shared<HashStore>(std::chrono::seconds(5));
  ConnectivityResult result;
  std::vector<std::thread> threads;
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      ProbeContext ctx;
      ctx.store = store;
      ctx.rank = r;
      ctx.world = kRanks;
      ctx.timeout = std::chrono::milliseconds(500);
      ctx.hosts = {"hostA", "hostA", "hostB", "hostB"};
      auto out = run_connectivity(ctx);
      if (r == 0) result = std::move(out);
    });
  }
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 30);
  EXPECT_EQ(result.missing_ranks, std::vector<int>{3}) << result.to_text();
  EXPECT_EQ(result.broken().size(), 3u) << result.to_text();
  for (const auto& p : result.broken()) EXPECT_EQ(p.b, 3);
}

AcceptSpec perf_spec() {
  return parse_spec(nlohmann::json::parse(R"({"timeout": "5s", "checks": [
      {"probe": "connectivity", "rules": {"all_reachable": true}},
      {"perf": "all_reduce", "min_bytes": "1K", "max_bytes": "16K", "iters": 3,
       "rules": {"min_busbw_gbps": {"16K": 0}, "max_time_us": {"1K": 5e6}}}]})"));
}

TEST_F(ProbesOverGloo, AcceptPerfCheckRunsTheEngineOnEveryRank) {
  const AcceptSpec spec = perf_spec();
  const AcceptReport rep =
      run_probe_ranks([&](ProbeContext& ctx) { return run_accept(ctx, spec); });
  ASSERT_EQ(rep.checks.size(), 2u);
  const CheckOutcome& perf = rep.checks[1];
  EXPECT_TRUE(perf.passed) << reports::accept_text(rep);
  ASSERT_EQ(perf.rows.size(), 5u);  // 1K 2K 4K 8K 16K, out of place
  for (const auto& row : perf.rows) {
    EXPECT_EQ(row.placement, "out");
    EXPECT_EQ(row.wrong, 0) << row.size_bytes;
    EXPECT_EQ(row.rank_time_us.size(), static_cast<size_t>(kRanks));
    EXPECT_GT(row.busbw_gbps, 0);
  }
  EXPECT_GT(perf.metrics.at("busbw@16K"), 0);
  EXPECT_GT(perf.metrics.at("time_us@1K"), 0);
  EXPECT_NE(perf.text.find("        1024           256     float     sum      -1"),
            std::string::npos)
      << perf.text;
}

TEST_F(ProbesOverGloo, AcceptPerfCheckNamesTheSizeWithWrongData) {
  // Rank 2 flips element 1 of its result after every validation call: every size is wrong.
  const MapEnv env(
      MapEnv::Map{{"COLLIE_PERF_TEST_CORRUPT", "2:1"}, {"COLLIE_ENABLE_TEST_HOOKS", "1"}});
  const AcceptSpec spec = perf_spec();
  const AcceptReport rep =
      run_probe_ranks([&](ProbeContext& ctx) { return run_accept(ctx, spec); }, &env);
  ASSERT_EQ(rep.checks.size(), 2u);
  EXPECT_TRUE(rep.checks[0].passed);
  const CheckOutcome& perf = rep.checks[1];
  EXPECT_FALSE(perf.passed);
  EXPECT_FALSE(rep.passed());
  ASSERT_EQ(perf.findings.size(), 5u) << reports::accept_text(rep);
  EXPECT_EQ(perf.findings[0].kind, "size");
  EXPECT_EQ(perf.findings[0].who, "1K");
  EXPECT_EQ(perf.findings[0].evidence, "1 wrong elements, first on rank 2 (hostB) at element 1");
  EXPECT_NE(perf.failures[0].find("1 wrong elements at 1K (#wrong must be 0)"), std::string::npos)
      << perf.failures[0];
}

}  // namespace
}  // namespace collie::probes
