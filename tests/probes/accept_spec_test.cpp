#include "probes/accept_spec.h"

#include <gtest/gtest.h>

namespace collie::probes {
namespace {

using json = nlohmann::json;

TEST(AcceptSpec, ShippedSampleParses) {
  const AcceptSpec s = load_spec(std::string(COLLIE_SOURCE_DIR) + "/docs/accept-spec.json");
  ASSERT_GE(s.checks.size(), 4u);
  std::set<std::string> kinds;
  for (const auto& c : s.checks) {
    kinds.insert(c.kind);
    EXPECT_FALSE(c.rules.empty()) << c.name;
  }
  for (const char* k : {"connectivity", "pairwise", "stragglers", "env"})
    EXPECT_TRUE(kinds.count(k)) << k;
}

TEST(AcceptSpec, Defaults) {
  const AcceptSpec s = parse_spec(json::parse(R"({"checks": [{"probe": "connectivity",
      "rules": {"all_reachable": true}}]})"));
  EXPECT_EQ(s.backend, "gloo");
  EXPECT_EQ(s.timeout, std::chrono::seconds(10));
  ASSERT_EQ(s.checks.size(), 1u);
  EXPECT_EQ(s.checks[0].name, "connectivity");
  EXPECT_TRUE(s.checks[0].params.empty());
}

TEST(AcceptSpec, PerfCheckAndSizes) {
  const AcceptSpec s = parse_spec(json::parse(R"({"timeout": "3s", "checks": [{"perf": "all_reduce",
      "min_bytes": "1M", "max_bytes": "64M", "rules": {"min_busbw_gbps": {"64M": 1.5}}}]})"));
  EXPECT_EQ(s.timeout, std::chrono::seconds(3));
  EXPECT_EQ(s.checks[0].kind, "perf");
  EXPECT_EQ(s.checks[0].name, "perf all_reduce");
  EXPECT_EQ(s.checks[0].params["collective"], "all_reduce");
  EXPECT_EQ(parse_bytes(json("64M"), "x"), 64 << 20);
  EXPECT_EQ(parse_bytes(json("1.5K"), "x"), 1536);
  EXPECT_EQ(parse_bytes(json(8), "x"), 8);
}

void expect_error(const std::string& spec, const std::string& needle) {
  try {
    parse_spec(json::parse(spec));
    ADD_FAILURE() << "accepted: " << spec;
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(AcceptSpec, UnusableSpecsNameTheProblem) {
  expect_error(R"([])", "JSON object");
  expect_error(R"({"checks": []})", "non-empty list");
  expect_error(R"({"checks": [{"probe": "bogus", "rules": {}}]})", "unknown probe");
  expect_error(R"({"checks": [{"probe": "pairwise"}]})", "no rules");
  expect_error(R"({"checks": [{"probe": "pairwise", "bytez": 3, "rules": {"max_slow_hosts": 0}}]})",
               "unknown key 'bytez'");
  expect_error(R"({"checks": [{"probe": "pairwise", "rules": {"max_slow_hosts": -1}}]})",
               "non-negative integer");
  expect_error(
      R"({"checks": [{"probe": "pairwise", "bytes": "4Q", "rules": {"max_slow_hosts": 0}}]})",
      "not a size");
  expect_error(R"({"checks": [{"probe": "env", "rules": {"consistent": true}},
                              {"probe": "env", "rules": {"consistent": true}}]})",
               "used twice");
  expect_error(R"({"checks": [{"probe": "stragglers", "rules": {"max_rise_vs_baseline":
               {"median_skew_us": 0.5}}}]})",
               "needs a \"baseline\"");
  expect_error(
      R"({"timeout": "soon", "checks": [{"probe": "env", "rules": {"consistent": true}}]})",
      "duration");
  expect_error(R"({"checks": [{"probe": "env", "perf": "all_reduce", "rules": {}}]})",
               "exactly one");
  expect_error(R"({"checks": [{"perf": "all_reduce", "rules": {"min_busbw_gbps": {"big": 1}}}]})",
               "not a size");
  expect_error(R"({"colour": "red", "checks": [{"probe": "env", "rules": {"consistent": true}}]})",
               "unknown key 'colour'");
}

}  // namespace
}  // namespace collie::probes
