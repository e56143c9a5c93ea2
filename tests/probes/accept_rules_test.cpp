#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

#include "probes/accept.h"

namespace collie::probes {
namespace {

using json = nlohmann::json;

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
    std::vector<json> e;
    for (int p = 0; p < 4; ++p) {
      if (p == r) continue;
      const bool ok = p != 3;
      e.push_back({{"peer", p},
                   {"ok", ok},
                   {"rtt_us", ok ? 50.0 : -1.0},
                   {"error", ok ? "" : "recv from 3 timed out after 2000 ms"}});
    }
    rows[r] = row(e);
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

  // One side's failure is enough to call a pair broken.
  rows[3] = row({{{"peer", 0}, {"ok", true}, {"rtt_us", 40.0}, {"error", ""}},
                 {{"peer", 1}, {"ok", true}, {"rtt_us", 40.0}, {"error", ""}},
                 {{"peer", 2}, {"ok", true}, {"rtt_us", 40.0}, {"error", ""}}});
  const ConnectivityResult r2 = merge_connectivity(4, hosts, rows);
  EXPECT_EQ(r2.broken().size(), 3u);
  EXPECT_TRUE(r2.missing_ranks.empty());
}

PairwiseResult slow_host_result() {
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
  return merge_pairwise(8, hosts, rows, PairwiseOptions{});
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

  const CheckOutcome floor =
      evaluate_pairwise(check(R"({"probe": "pairwise", "rules": {"min_link_gbps": 0.5}})"), r, {});
  EXPECT_FALSE(floor.passed);
  EXPECT_EQ(floor.failures.size(), 24u);  // every directed link touching host c
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
  const RankInfo local = describe_local({"NCCL_ALGO=Ring", "PATH=/bin", "UCX_TLS=tcp"});
  EXPECT_EQ(local.at("env.NCCL_ALGO"), "Ring");
  EXPECT_EQ(local.at("env.UCX_TLS"), "tcp");
  EXPECT_FALSE(local.count("env.PATH"));
  EXPECT_FALSE(local.at("cpu_count").empty());
}

TEST(AcceptRules, PerfFloorsAndBaseline) {
  const CheckSpec c = check(R"({"perf": "all_reduce", "rules": {"min_busbw_gbps": {"64M": 2,
      "1M": 0.5}, "max_drop_vs_baseline": {"busbw": 0.1}}})");
  const std::vector<PerfPoint> pts{{1 << 20, 0.9, 100, 0}, {64 << 20, 1.5, 9000, 0}};
  const CheckOutcome o = evaluate_perf(
      c, pts, {{"perf all_reduce", {{"busbw@1048576", 1.0}, {"busbw@67108864", 1.6}}}});
  EXPECT_FALSE(o.passed);
  ASSERT_EQ(o.failures.size(), 1u) << o.failures[1];
  EXPECT_NE(o.failures[0].find("below the floor 2 GB/s"), std::string::npos) << o.failures[0];
  const CheckOutcome regress = evaluate_perf(
      check(R"({"perf": "all_reduce", "rules": {"max_drop_vs_baseline": {"busbw": 0.1}}})"), pts,
      {{"perf all_reduce", {{"busbw@1048576", 1.5}, {"busbw@67108864", 1.6}}}});
  ASSERT_EQ(regress.failures.size(), 1u);
  EXPECT_NE(regress.failures[0].find("busbw@1048576 fell 40%"), std::string::npos)
      << regress.failures[0];
}

TEST(AcceptRules, ReportWritersAndBaselineRoundTrip) {
  AcceptReport rep;
  rep.name = "rack <7> & co";
  rep.world = 8;
  rep.hosts = {"a", "a", "b", "b", "c", "c", "d", "d"};
  rep.checks.push_back(evaluate_pairwise(
      check(R"({"probe": "pairwise", "rules": {"max_slow_hosts": 0}})"), slow_host_result(), {}));
  EXPECT_FALSE(rep.passed());
  const std::string junit = rep.to_junit();
  EXPECT_NE(junit.find("failures=\"1\""), std::string::npos);
  EXPECT_NE(junit.find("<failure message="), std::string::npos);
  EXPECT_NE(junit.find("rack &lt;7&gt; &amp; co"), std::string::npos);
  EXPECT_NE(rep.to_markdown().find("| host | c (ranks 4, 5) |"), std::string::npos)
      << rep.to_markdown();
  EXPECT_NE(rep.to_html().find("REJECTED"), std::string::npos);
  EXPECT_NE(rep.summary_text().find("REJECTED: 1 of 1 checks failed"), std::string::npos);
  char path[] = "/tmp/collie_accept_baseline_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << rep.to_json().dump();
  const Baseline b = load_baseline(path);
  EXPECT_DOUBLE_EQ(b.at("pairwise").at("median_gbps"), 1);
  std::ofstream(path) << R"({"not": "a report"})";
  EXPECT_THROW(load_baseline(path), SpecError);
  ::unlink(path);
}

}  // namespace
}  // namespace collie::probes
