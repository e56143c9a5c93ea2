#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <thread>

#include "pairwise_fixture.h"
#include "probes/accept.h"

namespace collie::probes {
namespace {

using json = nlohmann::json;
using fixture::from_matrix;

CheckSpec check(const std::string& spec) {
  return parse_spec(json::parse(R"({"baseline": "b.json", "checks": [)" + spec + "]}"))
      .checks.at(0);
}

std::string row(std::vector<json> entries) { return json(entries).dump(); }

TEST(AcceptRules, ConnectivityNamesBrokenPairsAndIsolatedHost) {
  // 4 ranks, host "d" = rank 3; rank 3's link is down: it fails with everyone.
  const std::vector<std::string> hosts{"a", "b", "c", "d"};
  std::vector<std::optional<std::string>> rows(4);
  for (int r = 0; r < 3; ++r) {
    std::vector<PeerResult> e;
    for (int p = 0; p < 4; ++p) {
      if (p == r) continue;
      const bool ok = p != 3;
      e.push_back({p, ok, ok ? 50.0 : -1.0, ok ? "" : "recv from 3 timed out after 2000 ms"});
    }
    rows[r] = connectivity_row(e, 0);
  }
  // Rank 3 never reported (its store connection is down too).
  const ConnectivityResult r = merge_connectivity(4, hosts, rows);
  EXPECT_EQ(r.broken().size(), 3u);
  EXPECT_EQ(r.missing_ranks, std::vector<int>{3});
  ASSERT_EQ(r.isolated_hosts().size(), 1u);
  EXPECT_EQ(r.isolated_hosts()[0], "d (rank 3)");
  const CheckOutcome o = evaluate_connectivity(check(R"({"probe": "connectivity",
      "rules": {"all_reachable": true}})"),
                                               r);
  EXPECT_FALSE(o.passed);
  bool host_named = false;
  for (const auto& f : o.findings) host_named |= f.kind == "host" && f.who == "d (rank 3)";
  EXPECT_TRUE(host_named);
  EXPECT_NE(r.to_text().find("BROKEN: 3 of 6 pairs"), std::string::npos) << r.to_text();
  EXPECT_EQ(r.to_json()["reachable"][0][3], 0);
  EXPECT_EQ(r.to_json()["reachable"][0][1], 1);
  EXPECT_DOUBLE_EQ(r.rtt_min_us, 50);

  // One side's failure is enough to call a pair broken.
  rows[3] = connectivity_row({{0, true, 40.0, ""}, {1, true, 40.0, ""}, {2, true, 40.0, ""}}, 0);
  const ConnectivityResult r2 = merge_connectivity(4, hosts, rows);
  EXPECT_EQ(r2.broken().size(), 3u);
  EXPECT_TRUE(r2.missing_ranks.empty());
  EXPECT_DOUBLE_EQ(r2.rtt_min_us, 40);
}

TEST(AcceptRules, ConnectivityMaxRttNamesAPairOnlyWhenBothEndsSawItSlow) {
  // Ranks list the peers whose round trip was above 100 us; a pair is slow when its best round
  // trip (the lower of its two ends') is: 0 <-> 1 is (both ends), 0 <-> 2 is not (rank 2 saw
  // 60 us).
  const std::vector<std::string> hosts{"a", "b", "c"};
  std::vector<std::optional<std::string>> rows(3);
  rows[0] = connectivity_row({{1, true, 300, ""}, {2, true, 250, ""}}, 100);
  rows[1] = connectivity_row({{0, true, 280, ""}, {2, true, 50, ""}}, 100);
  rows[2] = connectivity_row({{0, true, 60, ""}, {1, true, 50, ""}}, 100);
  const ConnectivityResult r = merge_connectivity(3, hosts, rows);
  ASSERT_EQ(r.slow_pairs.size(), 1u);
  EXPECT_EQ(r.slow_pairs[0].a, 0);
  EXPECT_EQ(r.slow_pairs[0].b, 1);
  EXPECT_DOUBLE_EQ(r.slow_pairs[0].rtt_us, 280);
  EXPECT_DOUBLE_EQ(r.rtt_max_us, 300);
  const CheckOutcome o =
      evaluate_connectivity(check(R"({"probe": "connectivity", "rules": {"max_rtt_us": 100}})"), r);
  EXPECT_FALSE(o.passed);
  ASSERT_EQ(o.failures.size(), 1u);
  EXPECT_EQ(o.failures[0], "pair 0 <-> 1 round trip 280 us > 100 us");
}

PairwiseResult slow_host_result(const PairwiseOptions& o = {}) {
  const std::vector<std::string> hosts{"a", "a", "b", "b", "c", "c", "d", "d"};
  std::vector<std::optional<std::string>> rows(8);
  for (int r = 0; r < 8; ++r) {
    std::vector<json> e;
    for (int p = 0; p < 8; ++p) {
      if (p == r) continue;
      const double bw = hosts[r] == hosts[p] ? 50 : (hosts[r] == "c" || hosts[p] == "c") ? 0.1 : 1;
      e.push_back({{"peer", p}, {"lat_us", 30.0}, {"bw_gbps", bw}, {"error", ""}});
    }
    rows[r] = row(e);
  }
  PairwiseResult r = merge_pairwise(8, hosts, rows, o);
  isolate_result(r, o, from_matrix(r), 7);
  return r;
}

TEST(AcceptRules, PairwiseNamesTheSlowHost) {
  const PairwiseResult r = slow_host_result();
  ASSERT_EQ(r.slow_hosts().size(), 1u);
  EXPECT_EQ(r.slow_hosts()[0].name, "c (ranks 4, 5)");
  EXPECT_NEAR(r.slow_hosts()[0].deviation, -0.9, 1e-9);
  EXPECT_NE(r.to_text().find("SLOW HOST: c (ranks 4, 5)"), std::string::npos) << r.to_text();
  const CheckOutcome o = evaluate_pairwise(
      check(R"({"probe": "pairwise", "rules": {"max_slow_hosts": 0, "min_link_gbps": 0.05}})"), r,
      {});
  EXPECT_FALSE(o.passed);
  ASSERT_EQ(o.failures.size(), 1u) << o.failures[0];
  ASSERT_FALSE(o.findings.empty());
  EXPECT_EQ(o.findings[0].kind, "host");
  EXPECT_EQ(o.findings[0].who, "c (ranks 4, 5)");
  EXPECT_NE(o.findings[0].evidence.find("90% below"), std::string::npos) << o.findings[0].evidence;
  EXPECT_DOUBLE_EQ(o.metrics.at("median_gbps"), 1);

  EXPECT_EQ(o.findings[0].code, "HOST_SLOW");
  EXPECT_EQ(o.findings[0].severity, "CRIT");  // 90 % >= crit_drop
  EXPECT_FALSE(o.findings[0].next_step.empty());
  EXPECT_NE(o.findings[0].evidence.find("bad in 2 of 2 re-measurements"), std::string::npos)
      << o.findings[0].evidence;
  EXPECT_EQ(o.verdict(), "CRIT");

  // The floor goes to the probe, which confirms it: the slow host is named once, not each of
  // the 24 directed links touching it.
  const CheckSpec floor_check = check(R"({"probe": "pairwise", "rules": {"min_link_gbps": 0.5}})");
  const PairwiseResult fr = slow_host_result(pairwise_options(floor_check, AcceptSpec{}, {}));
  const CheckOutcome floor = evaluate_pairwise(floor_check, fr, {});
  EXPECT_FALSE(floor.passed);
  ASSERT_EQ(floor.failures.size(), 1u);
  EXPECT_NE(floor.failures[0].find("c (ranks 4, 5) is outside the absolute limits"),
            std::string::npos)
      << floor.failures[0];
  EXPECT_NE(floor.findings.at(0).evidence.find("below the floor 0.5"), std::string::npos)
      << floor.findings.at(0).evidence;
}

TEST(AcceptRules, PairwiseWarnsBelowCritDropAndAllowsWhatTheRuleAllows) {
  // Host c at 0.6 of the others: 40 % below, a WARN with the default crit_drop 0.5.
  const std::vector<std::string> hosts{"a", "a", "b", "b", "c", "c", "d", "d"};
  std::vector<std::optional<std::string>> rows(8);
  for (int r = 0; r < 8; ++r) {
    std::vector<json> e;
    for (int p = 0; p < 8; ++p) {
      if (p == r) continue;
      const double bw = hosts[r] == hosts[p] ? 50 : (hosts[r] == "c" || hosts[p] == "c") ? 0.6 : 1;
      e.push_back({{"peer", p}, {"lat_us", 30.0}, {"bw_gbps", bw}, {"error", ""}});
    }
    rows[r] = row(e);
  }
  PairwiseResult r = merge_pairwise(8, hosts, rows, PairwiseOptions{});
  isolate_result(r, PairwiseOptions{}, from_matrix(r), 7);
  ASSERT_EQ(r.isolation.findings.size(), 1u) << r.to_text();
  EXPECT_EQ(r.verdict(), Verdict::Warn);
  const CheckOutcome o =
      evaluate_pairwise(check(R"({"probe": "pairwise", "rules": {"max_slow_hosts": 0}})"), r, {});
  EXPECT_TRUE(o.passed);
  EXPECT_EQ(o.verdict(), "WARN");
  ASSERT_EQ(o.warnings.size(), 1u);
  EXPECT_EQ(o.findings.at(0).severity, "WARN");
  const CheckOutcome allowed =
      evaluate_pairwise(check(R"({"probe": "pairwise", "rules": {"max_slow_hosts": 1}})"), r, {});
  EXPECT_EQ(allowed.verdict(), "OK");
  AcceptReport rep;
  rep.checks.push_back(o);
  EXPECT_TRUE(rep.passed());
  EXPECT_EQ(rep.verdict(), "WARN");
  EXPECT_NE(reports::accept_text(rep).find("ACCEPTED WITH WARNINGS"), std::string::npos);
  EXPECT_NE(reports::accept_markdown(rep).find("| HOST_SLOW | WARN |"), std::string::npos)
      << reports::accept_markdown(rep);
  EXPECT_EQ(reports::accept_json(rep)["verdict"], "WARN");
}

TEST(AcceptRules, PairwiseWhoseSurveyWasMostlyStarvedIsInconclusive) {
  // A healthy 4-host result; then the same with most of its survey pairs CPU-starved (what
  // isolate() counts): nothing was cleared by a judged measurement, so the check is
  // INCONCLUSIVE with the reason, not OK (and not failed).
  const std::vector<std::string> hosts{"a", "a", "b", "b", "c", "c", "d", "d"};
  std::vector<std::optional<std::string>> rows(8);
  for (int r = 0; r < 8; ++r) {
    std::vector<json> e;
    for (int p = 0; p < 8; ++p)
      if (p != r) e.push_back({{"peer", p}, {"lat_us", 30.0}, {"bw_gbps", 1.0}, {"error", ""}});
    rows[r] = row(e);
  }
  PairwiseResult r = merge_pairwise(8, hosts, rows, PairwiseOptions{});
  isolate_result(r, PairwiseOptions{}, from_matrix(r), 7);
  const CheckSpec c = check(R"({"probe": "pairwise", "rules": {"max_slow_hosts": 0}})");
  EXPECT_EQ(evaluate_pairwise(c, r, {}).verdict(), "OK") << r.to_text();
  r.isolation.survey_measured = 9;
  r.isolation.survey_starved = 4;  // not most
  EXPECT_EQ(evaluate_pairwise(c, r, {}).verdict(), "OK");
  EXPECT_EQ(r.verdict(), Verdict::Ok);
  r.isolation.survey_starved = 5;
  r.isolation.survey_wait = 0.81;
  const CheckOutcome o = evaluate_pairwise(c, r, {});
  EXPECT_TRUE(o.passed);
  EXPECT_EQ(o.verdict(), "INCONCLUSIVE");
  ASSERT_EQ(o.undecided.size(), 1u);
  EXPECT_NE(o.undecided[0].find("5 of 9 survey pairs CPU-starved (their ranks waited for a CPU up "
                                "to 81% of the time)"),
            std::string::npos)
      << o.undecided[0];
  EXPECT_EQ(r.verdict(), Verdict::Inconclusive);
  EXPECT_NE(r.to_text().find("\nINCONCLUSIVE SURVEY: 5 of 9 survey pairs CPU-starved"),
            std::string::npos)
      << r.to_text();
  EXPECT_EQ(r.to_json()["isolation"]["survey_starved"], 5);
}

TEST(AcceptRules, PairwiseRelativeToBaseline) {
  const PairwiseResult r = slow_host_result();
  const CheckSpec c =
      check(R"({"probe": "pairwise", "rules": {"max_drop_vs_baseline": {"median_gbps": 0.2}}})");
  EXPECT_TRUE(evaluate_pairwise(c, r, {{"pairwise", {{"median_gbps", 1.1}}}}).passed);
  const CheckOutcome o = evaluate_pairwise(c, r, {{"pairwise", {{"median_gbps", 2.0}}}});
  EXPECT_FALSE(o.passed);
  EXPECT_NE(o.failures[0].find("fell 50% below the baseline"), std::string::npos) << o.failures[0];
  EXPECT_FALSE(evaluate_pairwise(c, r, {}).passed);  // baseline lacks the check
}

TEST(AcceptRules, StragglersFromWaitTimes) {
  // Rank 2 arrives ~2 ms late every iteration, so it waits ~2 ms less than the others.
  std::vector<std::vector<double>> waits(4);
  for (int i = 0; i < 20; ++i)
    for (int r = 0; r < 4; ++r) waits[r].push_back(r == 2 ? 100 + i % 3 : 2100 + (r * 7 + i) % 50);
  const StragglerResult s = analyze_stragglers(waits, {"a", "a", "b", "b"}, 500);
  ASSERT_EQ(s.stragglers().size(), 1u);
  EXPECT_EQ(s.stragglers()[0].rank, 2);
  EXPECT_DOUBLE_EQ(s.stragglers()[0].last_fraction, 1.0);
  EXPECT_GT(s.median_skew_us, 1900);
  const CheckOutcome o = evaluate_stragglers(
      check(R"({"probe": "stragglers", "rules": {"max_skew_us": 1000, "max_stragglers": 0}})"), s,
      {});
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.failures.size(), 2u);
  ASSERT_EQ(o.findings.size(), 1u);
  EXPECT_EQ(o.findings[0].who, "2 (b)");
  EXPECT_TRUE(evaluate_stragglers(
                  check(R"({"probe": "stragglers", "rules": {"max_skew_us": 3000}})"), s, {})
                  .passed);
}

TEST(AcceptRules, EnvInconsistencies) {
  RankInfo base{{"host", "a"},
                {"cpu", "X"},
                {"version.gloo", "1"},
                {"env.NCCL_IB_HCA", "mlx5_0"},
                {"env.OMPI_COMM_WORLD_RANK", "0"},
                {"env.NCCL_DEBUG", "INFO"}};
  std::vector<std::optional<RankInfo>> infos(4, base);
  (*infos[1])["host"] = "b";
  (*infos[1])["env.OMPI_COMM_WORLD_RANK"] = "1";
  (*infos[3])["env.NCCL_IB_HCA"] = "mlx5_1";
  (*infos[2]).erase("env.NCCL_DEBUG");
  const EnvResult r = compare_env(infos);
  ASSERT_EQ(r.inconsistencies.size(), 2u);
  EXPECT_EQ(r.inconsistencies[0].field, "env.NCCL_DEBUG");
  EXPECT_EQ(r.inconsistencies[1].to_text(),
            "env.NCCL_IB_HCA: 'mlx5_0' on ranks 0-2; 'mlx5_1' on rank 3");
  const CheckOutcome o = evaluate_env(
      check(R"({"probe": "env", "rules": {"consistent": true, "ignore": ["env.NCCL_DEB*"]}})"), r);
  EXPECT_FALSE(o.passed);
  ASSERT_EQ(o.findings.size(), 1u);
  EXPECT_EQ(o.findings[0].who, "env.NCCL_IB_HCA");
  EXPECT_TRUE(per_rank_field("env.OMPI_COMM_WORLD_LOCAL_RANK"));
  EXPECT_FALSE(per_rank_field("env.NCCL_IB_HCA"));
  // Open MPI's own per-rank MCA variables (seen under mpirun) are lower case.
  EXPECT_TRUE(per_rank_field("env.OMPI_MCA_ess_base_vpid"));
  EXPECT_TRUE(per_rank_field("env.OMPI_MCA_orte_ess_node_rank"));
  EXPECT_TRUE(per_rank_field("env.OMPI_MCA_plm"));  // remote nodes only
  EXPECT_FALSE(per_rank_field("env.OMPI_MCA_btl"));
  const RankInfo local = describe_local(
      {"NCCL_ALGO=Ring", "PATH=/bin", "UCX_TLS=tcp", "RANK=2", "NCCL_IB_PASSWD=hunter2"});
  EXPECT_EQ(local.at("env.NCCL_ALGO"), "Ring");
  EXPECT_EQ(local.at("env.UCX_TLS"), "tcp");
  EXPECT_FALSE(local.count("env.PATH"));
  EXPECT_FALSE(local.count("env.RANK"));  // differs by rank: not compared
  // A credential's value never reaches the report (core/env_snapshot.h's rule; was copied).
  EXPECT_EQ(local.at("env.NCCL_IB_PASSWD"), "<redacted>");
  EXPECT_FALSE(local.at("cpu_count").empty());
}

reports::ResultRow perf_row(int64_t bytes, double busbw, double time_us, int64_t wrong,
                            std::vector<double> rank_times) {
  reports::ResultRow r;
  r.collective = "all_reduce";
  r.placement = "out";
  r.size_bytes = bytes;
  r.dtype = "float";
  r.redop = "sum";
  r.busbw_gbps = busbw;
  r.time_us = time_us;
  r.wrong = wrong;
  r.rank_time_us = std::move(rank_times);
  for (size_t k = 0; k < r.rank_time_us.size(); ++k)
    if (r.slowest_rank < 0 || r.rank_time_us[k] > r.rank_time_us[r.slowest_rank])
      r.slowest_rank = static_cast<int>(k);
  return r;
}

TEST(AcceptRules, PerfFloorsNameTheSizeAndSlowestRank) {
  const CheckSpec c = check(R"({"perf": "all_reduce", "min_bytes": "1M", "max_bytes": "64M",
      "rules": {"min_busbw_gbps": {"64M": 2, "1M": 0.5}, "max_time_us": {"1M": 50}}})");
  PerfCheckResult r;
  r.rows = {perf_row(1 << 20, 0.9, 100, 0, {90, 95, 100, 110}),
            perf_row(64 << 20, 1.5, 9000, 0, {8000, 8100, 8200, 12000})};
  const std::vector<std::string> hosts{"a", "a", "b", "b"};
  const CheckOutcome o = evaluate_perf(c, r, hosts, {});
  EXPECT_FALSE(o.passed);
  ASSERT_EQ(o.failures.size(), 2u);
  EXPECT_NE(o.failures[0].find("busbw 1.500 GB/s at 64M is below the floor 2.000 GB/s"),
            std::string::npos)
      << o.failures[0];
  EXPECT_NE(o.failures[1].find("time 100.0 us at 1M is above the ceiling 50.00 us"),
            std::string::npos)
      << o.failures[1];
  ASSERT_EQ(o.findings.size(), 2u);
  EXPECT_EQ(o.findings[0].kind, "size");
  EXPECT_EQ(o.findings[0].who, "64M");
  EXPECT_NE(o.findings[0].evidence.find("slowest rank 3 (b) 12000 us vs median rank 8150 us"),
            std::string::npos)
      << o.findings[0].evidence;
  EXPECT_DOUBLE_EQ(o.metrics.at("busbw@64M"), 1.5);
  EXPECT_DOUBLE_EQ(o.metrics.at("time_us@1M"), 100);
  EXPECT_NE(o.text.find("    67108864"), std::string::npos) << o.text;  // nccl-tests row
  EXPECT_EQ(o.rows.size(), 2u);
}

TEST(AcceptRules, NodeProfilesSetPerHostLimits) {
  const AcceptSpec spec = parse_spec(json::parse(R"({
    "profiles": [
      {"name": "gpu", "hosts": "gpu-*", "min_link_gbps": 20, "max_latency_us": 30,
       "min_busbw_gbps": {"64M": 150, "1M": 10}},
      {"name": "cpu", "hosts": "*", "min_busbw_gbps": {"64M": 1}, "max_time_us": {"1M": 500}}],
    "checks": [{"perf": "all_reduce", "min_bytes": "1M", "max_bytes": "64M",
                "rules": {"min_busbw_gbps": {"64M": 0.1}}},
               {"probe": "pairwise", "rules": {"max_slow_hosts": 0}}]})"));
  ASSERT_EQ(spec.profiles.size(), 2u);
  EXPECT_EQ(spec.profile_for("gpu-07")->name, "gpu");
  EXPECT_EQ(spec.profile_for("login1")->name, "cpu");
  EXPECT_EQ(spec.profiles[0].min_busbw_gbps.at(64 << 20), 150);

  // Pairwise: the gpu hosts get the gpu floor and ceiling, the others none (0 = no limit).
  const PairwiseOptions po =
      pairwise_options(spec.checks[1], spec, {"gpu-01", "gpu-01", "gpu-02", "cpu-01"});
  EXPECT_EQ(po.host_floor_gbps.at("gpu-02"), 20);
  EXPECT_EQ(po.host_max_latency_us.at("gpu-01"), 30);
  EXPECT_FALSE(po.host_floor_gbps.count("cpu-01"));
  const IsolateOptions io = isolate_options(po, {"gpu-01", "gpu-02", "cpu-01"});
  EXPECT_EQ(io.thresholds.floor(0, 1), 20);
  EXPECT_EQ(io.thresholds.floor(0, 2), 20);  // the cpu host has none: the gpu one's applies
  EXPECT_EQ(io.thresholds.ceiling(1, 2), 30);

  // Perf: all-gpu job held to 150 GB/s at 64M; a mixed job to the loosest floor (cpu's 1).
  PerfCheckResult r;
  r.rows = {perf_row(1 << 20, 12, 100, 0, {90, 100}), perf_row(64 << 20, 100, 900, 0, {800, 900})};
  const CheckOutcome gpu = evaluate_perf(spec.checks[0], r, {"gpu-01", "gpu-02"}, {}, &spec);
  EXPECT_FALSE(gpu.passed);
  ASSERT_EQ(gpu.failures.size(), 1u);
  EXPECT_NE(gpu.failures[0].find("busbw 100.0 GB/s at 64M is below profile 'gpu' floor 150.0"),
            std::string::npos)
      << gpu.failures[0];
  EXPECT_EQ(gpu.findings.at(0).code, "PERF_BELOW_PROFILE");
  const CheckOutcome mixed = evaluate_perf(spec.checks[0], r, {"gpu-01", "login1"}, {}, &spec);
  EXPECT_TRUE(mixed.passed) << (mixed.failures.empty() ? "" : mixed.failures[0]);
  EXPECT_TRUE(evaluate_perf(spec.checks[0], r, {"gpu-01", "gpu-02"}, {}).passed);  // no spec
}

TEST(AcceptRules, PerfWrongDataErrorsAndBaseline) {
  PerfCheckResult r;
  r.rows = {perf_row(1 << 20, 0.9, 100, 0, {}), perf_row(2 << 20, 1.5, 9000, 3, {})};
  r.rows[1].wrong_rank = 1;
  r.rows[1].wrong_offset = 17;
  const std::vector<std::string> hosts{"a", "b"};
  // #wrong == 0 is enforced whatever the rules say.
  const CheckOutcome w = evaluate_perf(
      check(R"({"perf": "all_reduce", "rules": {"min_busbw_gbps": {"1M": 0.1}}})"), r, hosts, {});
  EXPECT_FALSE(w.passed);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_EQ(w.findings[0].who, "2M");
  EXPECT_EQ(w.findings[0].evidence, "3 wrong elements, first on rank 1 (b) at element 17");

  r.rows[1].wrong = 0;
  const CheckSpec rel =
      check(R"({"perf": "all_reduce", "rules": {"max_drop_vs_baseline": {"busbw": 0.1}}})");
  const CheckOutcome regress =
      evaluate_perf(rel, r, hosts, {{"perf all_reduce", {{"busbw@1M", 1.5}, {"busbw@2M", 1.6}}}});
  ASSERT_EQ(regress.failures.size(), 1u);
  EXPECT_NE(regress.failures[0].find("busbw@1M fell 40% below the baseline"), std::string::npos)
      << regress.failures[0];
  ASSERT_EQ(regress.findings.size(), 1u);
  EXPECT_EQ(regress.findings[0].kind, "size");
  EXPECT_EQ(regress.findings[0].who, "1M");
  EXPECT_TRUE(
      evaluate_perf(rel, r, hosts, {{"perf all_reduce", {{"busbw@1M", 0.95}, {"busbw@2M", 1.6}}}})
          .passed);

  r.errors = {"rank 1 (b): all_reduce timed out after 5000 ms"};
  r.missing_ranks = {};
  const CheckOutcome err = evaluate_perf(rel, r, hosts, {{"perf all_reduce", {{"busbw@1M", 0.9}}}});
  EXPECT_FALSE(err.passed);
  EXPECT_EQ(err.findings.at(0).kind, "rank");
  EXPECT_EQ(err.findings.at(0).who, "rank 1 (b)");
}

TEST(AcceptRules, BaselineRoundTrip) {
  AcceptReport rep;
  rep.name = "rack 7";
  rep.world = 8;
  rep.hosts = {"a", "a", "b", "b", "c", "c", "d", "d"};
  rep.checks.push_back(evaluate_pairwise(
      check(R"({"probe": "pairwise", "rules": {"max_slow_hosts": 0}})"), slow_host_result(), {}));
  EXPECT_FALSE(rep.passed());
  char path[] = "/tmp/collie_accept_baseline_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << reports::accept_json(rep).dump();
  const Baseline b = load_baseline(path);
  EXPECT_DOUBLE_EQ(b.at("pairwise").at("median_gbps"), 1);
  std::ofstream(path) << R"({"not": "a report"})";
  EXPECT_THROW(load_baseline(path), SpecError);
  ::unlink(path);
  EXPECT_THROW(load_baseline(path), SpecError);
  // Issue 40: a FIFO blocked the reader for ever (here a writer would end it after 3 s), and
  // /dev/zero ran it out of memory. Regular files only, refused at once.
  ASSERT_EQ(::mkfifo(path, 0600), 0);
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::seconds(3));
    const int w = ::open(path, O_WRONLY | O_NONBLOCK);
    if (w >= 0) ::close(w);
  });
  const auto t0 = std::chrono::steady_clock::now();
  try {
    load_baseline(path);
    ADD_FAILURE() << "a FIFO was read as a baseline";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("is a FIFO"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  writer.join();
  ::unlink(path);
  try {
    load_baseline("/dev/zero");
    ADD_FAILURE() << "/dev/zero was read as a baseline";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("is a character device"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace collie::probes
