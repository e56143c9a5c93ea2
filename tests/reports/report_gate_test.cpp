// Unit tests of the CI gate: the rank test, row classification (both methods), baselines and
// the one-line errors for unusable input files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <random>

#include "core/error.h"
#include "reports/baseline.h"
#include "reports/compare.h"
#include "reports/json_io.h"
#include "reports/stats.h"

namespace collie::reports {
namespace {

TEST(ReportStats, MannWhitneyMatchesHandComputedValues) {
  // a = {1,2,3}, b = {4,5,6}: U_a = 0, z = (|0-4.5|-0.5)/sqrt(5.25) = 1.7457, p = 0.0809.
  const MannWhitney t = mann_whitney_u({1, 2, 3}, {4, 5, 6});
  EXPECT_DOUBLE_EQ(t.u, 0);
  EXPECT_NEAR(t.z, -1.7457, 1e-4);
  EXPECT_NEAR(t.p, 0.0809, 1e-4);
  // Ties share ranks; identical samples carry no evidence.
  EXPECT_DOUBLE_EQ(mann_whitney_u({2, 2, 2}, {2, 2, 2}).p, 1.0);
  EXPECT_NEAR(mann_whitney_u({1, 2, 2, 3}, {2, 3, 3, 4}).u, 3.0,
              1e-12);  // 0 + 2 x 0.5 + (1 + 2 x 0.5)
  EXPECT_DOUBLE_EQ(median({5, 1, 3, 2}), 2.5);
  EXPECT_NEAR(relative_spread({90, 100, 110}), 0.2, 1e-12);
}

std::vector<double> noisy(double center, int n, unsigned seed) {
  std::mt19937 gen(seed);
  std::lognormal_distribution<double> d(0, 0.15);  // skewed like real iteration times
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(center * d(gen));
  return v;
}

LoadedRun make_run(const std::string& name, std::vector<std::vector<double>> samples,
                   const std::string& backend = "gloo", int world = 2) {
  LoadedRun run;
  run.path = name + ".json";
  run.label = name;
  run.result.meta.backend = backend;
  run.result.meta.world_size = world;
  int64_t size = 1 << 20;
  for (auto& s : samples) {
    ResultRow r;
    r.collective = "all_reduce";
    r.placement = "out";
    r.size_bytes = size;
    r.count = size / 4;
    r.dtype = "float";
    r.redop = "sum";
    r.time_us = s.empty() ? 100 : median(s);
    r.busbw_gbps = static_cast<double>(size) / 1e3 / r.time_us;
    r.samples_us = std::move(s);
    run.result.rows.push_back(r);
    size *= 2;
  }
  return run;
}

TEST(ReportCompare, RankTestSeparatesNoiseFromARealSlowdown) {
  const LoadedRun base = make_run("base", {noisy(100, 40, 1), noisy(200, 40, 2)});
  const LoadedRun same = make_run("same", {noisy(100, 40, 3), noisy(200, 40, 4)});
  const LoadedRun slow = make_run("slow", {noisy(130, 40, 5), noisy(200, 40, 6)});
  CompareReport ok = compare_runs(base, same, {});
  EXPECT_TRUE(ok.passed());
  EXPECT_EQ(ok.unchanged, 2);
  EXPECT_EQ(ok.rows[0].method, "mann-whitney");
  CompareReport bad = compare_runs(base, slow, {});
  EXPECT_FALSE(bad.passed());
  EXPECT_EQ(bad.regressions, 1);
  EXPECT_EQ(bad.rows[0].verdict, Verdict::Regression);
  EXPECT_LT(bad.rows[0].p, 0.01);
  EXPECT_EQ(bad.rows[1].verdict, Verdict::Unchanged);
  // A 30 % slowdown passes when 40 % is allowed, and improvements are reported as such.
  CompareOptions loose;
  loose.max_regression = 0.4;
  EXPECT_TRUE(compare_runs(base, slow, loose).passed());
  EXPECT_EQ(compare_runs(slow, base, {}).improvements, 1);
}

TEST(ReportCompare, ThresholdWithoutSamplesAndMetricTime) {
  LoadedRun base = make_run("base", {{}, {}});
  LoadedRun cur = make_run("cur", {{}, {}});
  cur.result.rows[0].time_us = 110;  // 10 % slower
  cur.result.rows[0].busbw_gbps = base.result.rows[0].busbw_gbps / 1.1;
  CompareOptions o;
  CompareReport r = compare_runs(base, cur, o);
  EXPECT_EQ(r.rows[0].method, "threshold");
  EXPECT_EQ(r.rows[0].verdict, Verdict::Regression);
  EXPECT_NEAR(r.rows[0].worse, 1 - 1 / 1.1, 1e-9);
  o.metric = Metric::Time;
  r = compare_runs(base, cur, o);
  EXPECT_NEAR(r.rows[0].worse, 0.10, 1e-9);
  EXPECT_EQ(r.regressions, 1);
  o.min_size = 2 << 20;  // drops the slow row
  r = compare_runs(base, cur, o);
  EXPECT_TRUE(r.passed());
  EXPECT_EQ(r.skipped, 1);
}

TEST(ReportCompare, MismatchesAreUnusableInput) {
  const LoadedRun base = make_run("base", {{}});
  EXPECT_THROW(compare_runs(base, make_run("mpi", {{}}, "mpi"), {}), InvalidArgument);
  EXPECT_THROW(compare_runs(base, make_run("w4", {{}}, "gloo", 4), {}), InvalidArgument);
  LoadedRun other = make_run("other", {{}});
  other.result.rows[0].dtype = "double";
  try {
    compare_runs(base, other, {});
    FAIL() << "no common rows must throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("no row of other.json matches"), std::string::npos);
  }
  LoadedRun extra = make_run("extra", {{}, {}});
  const CompareReport r = compare_runs(extra, base, {});
  EXPECT_EQ(r.missing, 1);
  EXPECT_TRUE(r.passed());
}

TEST(ReportBaseline, MedianPerRowSpreadAndPooledSamples) {
  LoadedRun a = make_run("a", {noisy(100, 10, 7)});
  LoadedRun b = make_run("b", {noisy(120, 10, 8)});
  LoadedRun c = make_run("c", {noisy(200, 10, 9)});
  a.result.rows[0].time_us = 100, b.result.rows[0].time_us = 120, c.result.rows[0].time_us = 200;
  const LoadedRun base = make_baseline({a, b, c});
  ASSERT_EQ(base.result.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(base.result.rows[0].time_us, 120);
  EXPECT_EQ(base.result.rows[0].samples_us.size(), 30u);
  EXPECT_EQ(base.spread[0].runs, 3);
  EXPECT_DOUBLE_EQ(base.spread[0].time_min_us, 100);
  EXPECT_DOUBLE_EQ(base.spread[0].time_max_us, 200);
  EXPECT_GT(base.spread[0].p50_max_us, base.spread[0].p50_min_us);
  EXPECT_THROW(make_baseline({a, make_run("m", {{}}, "mpi")}), InvalidArgument);
  // Round trip through the file keeps the spread, and the spread widens the allowed change.
  const std::string path = ::testing::TempDir() + "report_baseline_rt.json";
  std::ofstream(path) << baseline_to_json(base, {"a", "b", "c"}).dump();
  const LoadedRun back = load_run(path);
  EXPECT_EQ(back.baseline_runs, 3);
  ASSERT_EQ(back.spread.size(), 1u);
  EXPECT_DOUBLE_EQ(back.spread[0].time_max_us, 200);
  LoadedRun cur = make_run("cur", {noisy(125, 10, 10)});
  const CompareReport r = compare_runs(back, cur, {});
  EXPECT_GT(r.rows[0].threshold, 0.05);
  std::remove(path.c_str());
}

std::string load_error(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  try {
    load_run(path);
  } catch (const InvalidArgument& e) {
    std::remove(path.c_str());
    return e.what();
  }
  std::remove(path.c_str());
  return "";
}

TEST(ReportLoad, UnusableFilesSayWhatIsWrongInOneLine) {
  RunResult ok;
  ok.meta.backend = "gloo";
  ok.meta.world_size = 2;
  const std::string full = to_json(ok).dump();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "is empty"},
      {full.substr(0, full.size() / 2), "truncated"},
      {"{\"schema\": \"collie.perf.v1\", ]", "corrupt"},
      {"[1, 2]", "not a collie results file"},
      {"{\"schema\": \"collie.perf.v7\"}", "newer than this collie reads"},
      {"{\"schema\": \"other.thing\"}", "is not a collie perf results file"},
      {"{\"schema\": \"collie.perf.v1\", \"run\": {}}", "missing field"},
  };
  for (const auto& [text, expect] : cases) {
    const std::string e = load_error("report_bad.json", text);
    EXPECT_NE(e.find(expect), std::string::npos) << "'" << text << "' gave: " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  EXPECT_EQ(load_error("report_ok.json", full), "");
}

}  // namespace
}  // namespace collie::reports
