// `collie accept` on two hosts (issue 26): a direction 500x slower than its reverse, or a link far
// below what its hosts can do, rejects the pairwise check whatever allowance the rules give;
// a link nothing can pin on one of its two hosts counts against max_slow_hosts; an inconclusive
// finding makes the check, and the report, INCONCLUSIVE (exit 6) unless something fails.
#include <gtest/gtest.h>

#include "pairwise_fixture.h"
#include "probes/accept.h"

namespace collie::probes {
namespace {

using json = nlohmann::json;

CheckSpec check(const std::string& spec) {
  return parse_spec(json::parse(R"({"checks": [)" + spec + "]}")).checks.at(0);
}

// The issue's cluster as a full survey of ranks 0-3 on hosts a, a, b, b: every a -> b direction
// at `ab` GB/s, every b -> a at 2.6 (5 samples each); each rank reports its host's capacity.
PairwiseResult two_hosts(double ab, const PairwiseOptions& o, bool capacity) {
  const std::vector<std::string> hosts{"a", "a", "b", "b"};
  std::vector<std::optional<std::string>> rows(4);
  for (int r = 0; r < 4; ++r) {
    json e = json::array();
    for (int p = 0; p < 4; ++p) {
      if (p == r) continue;
      const double bw = hosts[r] == hosts[p] ? 5 : hosts[r] == "a" ? ab : 2.6;
      json x{{"peer", p},
             {"lat_us", 30.0},
             {"bw_gbps", bw},
             {"samples", std::vector<double>(5, bw)},
             {"error", ""}};
      if (capacity) x["capacity"] = capacity_json(HostCapacity{3.0, 1.25, "eth_d"});
      e.push_back(x);
    }
    rows[r] = e.dump();
  }
  PairwiseResult r = merge_pairwise(4, hosts, rows, o);
  // Re-measurements reproduce the survey, direction by direction.
  isolate_result(r, o, fixture::from_matrix(r, 5), 3);
  return r;
}

TEST(AcceptSmall, ADirection500xSlowerThanItsReverseRejects) {
  for (const bool capacity : {false, true}) {
    const CheckSpec only_floor =
        check(R"({"probe": "pairwise", "rules": {"min_link_gbps": 0.001}})");
    const PairwiseResult r =
        two_hosts(0.0048, pairwise_options(only_floor, AcceptSpec{}, {}), capacity);
    ASSERT_EQ(r.isolation.findings.size(), 1u) << r.to_text();
    const IsolationFinding& f = r.isolation.findings[0];
    EXPECT_EQ(f.fault, Fault::LinkSlow) << r.to_text();
    EXPECT_EQ(f.rule, capacity ? Rule::Capacity : Rule::Reverse) << r.to_text();
    EXPECT_EQ(r.verdict(), Verdict::Crit);
    EXPECT_NE(r.to_text().find("SLOW LINK: a (ranks 0, 1) <-> b (ranks 2, 3) [LINK_SLOW CRIT]: "
                               "a -> b 0.0048 GB/s"),
              std::string::npos)
        << r.to_text();
    EXPECT_NE(r.to_text().find("which of them is at fault cannot be separated (a's egress, b's "
                               "ingress or the path between them)"),
              std::string::npos)
        << r.to_text();
    // No allowance rule, the floor (0.001) holds: the far-below rules reject by themselves.
    const CheckOutcome o = evaluate_pairwise(only_floor, r, {});
    EXPECT_FALSE(o.passed) << r.to_text();
    ASSERT_EQ(o.failures.size(), 1u);
    EXPECT_NE(o.failures[0].find(capacity ? "is far below what its hosts can do (LINK_SLOW)"
                                          : "is far below its reverse direction (LINK_SLOW)"),
              std::string::npos)
        << o.failures[0];
    ASSERT_EQ(o.findings.size(), 1u);
    EXPECT_EQ(o.findings[0].code, "LINK_SLOW");
    EXPECT_NE(o.findings[0].next_step.find("known-good host added"), std::string::npos);
    const json j = r.to_json();
    EXPECT_EQ(j["isolation"]["findings"][0]["direction"], "a (ranks 0, 1) -> b (ranks 2, 3)");
    EXPECT_EQ(j["isolation"]["findings"][0]["separated"], false);
    ASSERT_EQ(j["capacity"].size(), 2u);
    EXPECT_EQ(j["capacity"][1]["line_gbps"], capacity ? 1.25 : 0.0);
  }
}

TEST(AcceptSmall, AnUnseparatedLinkCountsAsANamedHost) {
  // a -> b at 1 GB/s against 2.6 back: far below nothing (and the reference is the link
  // itself), so a floor of 2 GB/s is what names the link.
  const CheckSpec c =
      check(R"({"probe": "pairwise", "rules": {"max_slow_hosts": 0, "min_link_gbps": 2}})");
  const PairwiseResult r = two_hosts(1.0, pairwise_options(c, AcceptSpec{}, {}), false);
  ASSERT_EQ(r.isolation.findings.size(), 1u) << r.to_text();
  EXPECT_FALSE(r.isolation.findings[0].separated);
  const CheckOutcome o = evaluate_pairwise(c, r, {});
  EXPECT_FALSE(o.passed);
  // The floor is broken (said once), and max_slow_hosts too (one of the two hosts is bad); the
  // finding is listed once.
  EXPECT_EQ(o.findings.size(), 1u);
  ASSERT_EQ(o.failures.size(), 2u);
  EXPECT_NE(o.failures[0].find("outside the absolute limits"), std::string::npos) << o.failures[0];
  EXPECT_NE(o.failures[1].find("max_slow_hosts allows 0"), std::string::npos) << o.failures[1];
  const CheckSpec counts = check(R"({"probe": "pairwise", "rules": {"max_slow_hosts": 0}})");
  PairwiseOptions po = pairwise_options(counts, AcceptSpec{}, {});
  po.min_link_gbps = 2;  // the same finding, judged by the count rule alone
  const CheckOutcome by_count = evaluate_pairwise(counts, two_hosts(1.0, po, false), {});
  EXPECT_FALSE(by_count.passed);
  ASSERT_EQ(by_count.failures.size(), 1u);
  EXPECT_NE(by_count.failures[0].find("named (LINK_SLOW, one of its two hosts is bad; "
                                      "max_slow_hosts allows 0)"),
            std::string::npos)
      << by_count.failures[0];
}

TEST(AcceptSmall, AHealthyPairPasses) {
  const CheckSpec c = check(R"({"probe": "pairwise", "rules": {"max_slow_hosts": 0}})");
  const PairwiseResult r = two_hosts(2.4, pairwise_options(c, AcceptSpec{}, {}), true);
  EXPECT_TRUE(r.isolation.findings.empty()) << r.to_text();
  EXPECT_EQ(evaluate_pairwise(c, r, {}).verdict(), "OK");
}

TEST(AcceptSmall, AnInconclusiveFindingMakesTheCheckAndTheReportInconclusive) {
  const CheckSpec c = check(R"({"probe": "pairwise", "rules": {"max_slow_hosts": 0}})");
  PairwiseResult r = two_hosts(2.4, pairwise_options(c, AcceptSpec{}, {}), true);
  IsolationFinding f;
  f.fault = Fault::HostInconclusive;
  f.severity = Verdict::Inconclusive;
  f.a = 1;
  f.reason =
      "bad in 5 of 8 re-measurements against known-good partners; bad in most "
      "re-measurements, yet not beyond chance";
  f.next_step = fault_next_step(f.fault);
  r.isolation.findings.push_back(f);
  r.isolation.inconclusive = 1;
  EXPECT_EQ(r.verdict(), Verdict::Inconclusive);
  EXPECT_NE(r.to_text().find("INCONCLUSIVE HOST: b (ranks 2, 3) [HOST_INCONCLUSIVE "
                             "INCONCLUSIVE]"),
            std::string::npos)
      << r.to_text();
  EXPECT_NE(r.to_text().find("VERDICT: INCONCLUSIVE: 1 host(s) and 0 link(s) named (1 of 1 "
                             "findings inconclusive: re-run to decide)"),
            std::string::npos)
      << r.to_text();
  const CheckOutcome o = evaluate_pairwise(c, r, {});
  EXPECT_TRUE(o.passed);
  EXPECT_EQ(o.verdict(), "INCONCLUSIVE");
  ASSERT_EQ(o.undecided.size(), 1u);
  EXPECT_NE(o.undecided[0].find("host b (ranks 2, 3): bad in 5 of 8"), std::string::npos)
      << o.undecided[0];
  AcceptReport rep;
  rep.name = "two new nodes";
  rep.checks.push_back(o);
  EXPECT_TRUE(rep.passed());
  EXPECT_EQ(rep.verdict(), "INCONCLUSIVE");
  EXPECT_NE(reports::accept_text(rep).find("INCONCLUSIVE pairwise"), std::string::npos);
  EXPECT_NE(reports::accept_text(rep).find("\nINCONCLUSIVE: no check failed, 1 of 1 could not "
                                           "decide"),
            std::string::npos)
      << reports::accept_text(rep);
  EXPECT_EQ(reports::accept_json(rep)["verdict"], "INCONCLUSIVE");
  EXPECT_EQ(reports::accept_json(rep)["checks"][0]["inconclusive"].size(), 1u);
  EXPECT_NE(reports::accept_junit(rep).find("<skipped message=\"inconclusive: host b"),
            std::string::npos)
      << reports::accept_junit(rep);
  EXPECT_NE(reports::accept_markdown(rep).find("*inconclusive*"), std::string::npos);
  EXPECT_EQ(verdict_exit_code(Verdict::Inconclusive), kExitInconclusive);
  // A failed check outranks it.
  CheckOutcome failed = o;
  failed.fail("host c named");
  rep.checks.push_back(failed);
  EXPECT_EQ(rep.verdict(), "CRIT");
  EXPECT_NE(reports::accept_text(rep).find("REJECTED"), std::string::npos);
}

}  // namespace
}  // namespace collie::probes
