// Golden-file tests of every report format. The inputs are real `collie perf -I` results from
// tests/reports/golden/ (see README.md there). Regenerate the goldens after an intended format
// change with COLLIE_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "reports/accept_report.h"
#include "reports/compare_writers.h"
#include "reports/html_report.h"
#include "reports/render.h"

namespace collie::reports {
namespace {

class ReportGolden : public ::testing::Test {
 protected:
  // Paths in the reports are relative, so the goldens do not depend on the checkout location.
  void SetUp() override {
    ASSERT_EQ(::getcwd(cwd_, sizeof cwd_), cwd_);
    ASSERT_EQ(::chdir(COLLIE_GOLDEN_DIR), 0);
  }
  void TearDown() override { ASSERT_EQ(::chdir(cwd_), 0); }

  static std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }

  static void check(const std::string& name, const std::string& actual) {
    if (std::getenv("COLLIE_UPDATE_GOLDEN") != nullptr) {
      std::ofstream(name, std::ios::binary) << actual;
      return;
    }
    const std::string expected = slurp(name);
    ASSERT_FALSE(expected.empty()) << name << " is missing; run with COLLIE_UPDATE_GOLDEN=1";
    EXPECT_EQ(actual, expected) << name << " differs; if intended, regenerate with "
                                << "COLLIE_UPDATE_GOLDEN=1 and review the diff";
  }

  static std::vector<LoadedRun> inputs() {
    return load_runs({"report_input_gloo4.json", "report_input_gloo2.json"});
  }

  char cwd_[4096] = {};
};

TEST_F(ReportGolden, Markdown) { check("report_render.md", render_markdown(inputs())); }
TEST_F(ReportGolden, JUnit) { check("report_render.junit.xml", render_junit(inputs())); }
TEST_F(ReportGolden, Html) { check("report_render.html", render_html(inputs())); }
TEST_F(ReportGolden, Table) { check("report_render.table.txt", render_table(inputs())); }

TEST_F(ReportGolden, Csv) { check("report_render.csv", render_csv(inputs())); }

// `run` with row `i`'s samples and times scaled by `f`.
LoadedRun scaled(LoadedRun run, const std::string& path, size_t i, double f) {
  run.path = path;
  ResultRow& r = run.result.rows[i];
  for (double& s : r.samples_us) s *= f;
  r.time_us *= f;
  r.busbw_gbps /= f;
  r.algbw_gbps /= f;
  return run;
}

TEST_F(ReportGolden, CompareFormats) {
  const LoadedRun one = load_run("report_input_gloo4.json");
  LoadedRun base = make_baseline({one, scaled(one, "b2.json", 0, 1.05)});
  base.path = "baseline.json";
  // Two current runs: row 0 4x slower in both (a regression), row 1 2x slower in one run
  // only (inconclusive), row 2 with wrong elements in one run.
  LoadedRun c1 = scaled(one, "cur1.json", 0, 4);
  LoadedRun c2 = scaled(scaled(one, "cur2.json", 0, 4.2), "cur2.json", 1, 2);
  c2.result.rows[2].wrong = 2;
  CompareOptions o;
  o.max_regression = 0.25;
  const CompareReport rep = compare_runs(base, {c1, c2}, o);
  EXPECT_EQ(rep.regressions, 1);
  EXPECT_EQ(rep.inconclusive, 1);
  EXPECT_EQ(rep.wrong, 1);
  check("report_compare.txt", compare_text(rep));
  check("report_compare.md", compare_markdown(rep));
  check("report_compare.json", compare_json(rep).dump(2) + "\n");
  check("report_compare.junit.xml", compare_junit(rep));
}

// An acceptance report as `collie accept` builds it: a passing probe, a failing probe with
// findings, and a perf check whose rows are the real all_reduce rows of the 4-rank input.
AcceptReport accept_sample() {
  AcceptReport rep;
  rep.name = "rack <7> & co";
  rep.backend = "gloo";
  rep.world = 4;
  rep.hosts = {"a", "a", "b", "b"};
  rep.baseline = "last-good.json";
  CheckOutcome& conn = rep.checks.emplace_back();
  conn.name = conn.kind = "connectivity";
  conn.seconds = 0.4;
  conn.metrics = {{"broken_pairs", 0}, {"missing_ranks", 0}};
  conn.details = {{"all_reachable", true}};
  conn.text = "OK: all 6 pairs reachable\n";
  CheckOutcome& pw = rep.checks.emplace_back();
  pw.name = pw.kind = "pairwise";
  pw.seconds = 2.25;
  pw.fail("1 host(s) more than 25% below the median host bandwidth");
  pw.findings.push_back(
      {"host", "b (ranks 2, 3)", "median cross-host link 0.1 GB/s, 90% below | the median"});
  pw.metrics = {{"median_gbps", 1.0}};
  pw.text = "SLOW HOST: b (ranks 2, 3)\n";
  CheckOutcome& perf = rep.checks.emplace_back();
  perf.name = "perf all_reduce";
  perf.kind = "perf";
  perf.seconds = 1.5;
  for (const auto& row : load_run("report_input_gloo4.json").result.rows)
    if (row.collective == "all_reduce" && row.placement == "out") perf.rows.push_back(row);
  perf.fail("busbw 0.0001 GB/s at 8K is below the floor 1 GB/s");
  perf.findings.push_back({"size", "8K", "busbw 0.0001 GB/s; slowest rank 3 (b)"});
  perf.metrics = {{"busbw@8K", 0.0001}};
  perf.text = "#  nccl-tests rows\n";
  return rep;
}

TEST_F(ReportGolden, AcceptFormats) {
  const AcceptReport rep = accept_sample();
  EXPECT_FALSE(rep.passed());
  check("accept_report.txt", accept_text(rep));
  check("accept_report.md", accept_markdown(rep));
  check("accept_report.json", accept_json(rep).dump(2) + "\n");
  check("accept_report.junit.xml", accept_junit(rep));
  check("accept_report.html", accept_html(rep));
}

TEST_F(ReportGolden, AcceptStructure) {
  const AcceptReport rep = accept_sample();
  const std::string junit = accept_junit(rep);
  EXPECT_NE(junit.find(R"(tests="3" failures="2" errors="0")"), std::string::npos) << junit;
  EXPECT_NE(junit.find("collie.accept.rack &lt;7&gt; &amp; co"), std::string::npos);
  EXPECT_NE(junit.find("host b (ranks 2, 3): median cross-host link"), std::string::npos);
  const std::string md = accept_markdown(rep);
  EXPECT_NE(md.find("| host | b (ranks 2, 3) | median cross-host link 0.1 GB/s, 90% below \\| the "
                    "median |"),
            std::string::npos)
      << md;
  const std::string html = accept_html(rep);
  EXPECT_NE(html.find("<span class=\"fail\">REJECTED</span>"), std::string::npos);
  EXPECT_NE(html.find("class=\"plot busbw-plot\""), std::string::npos);  // the perf chart
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(accept_text(rep).find("REJECTED: 2 of 3 checks failed"), std::string::npos);
  // The JSON is the baseline format: metrics read back by name.
  const std::string path = ::testing::TempDir() + "accept_report_baseline.json";
  std::ofstream(path) << accept_json(rep).dump();
  const AcceptMetrics m = read_accept_metrics(path);
  EXPECT_DOUBLE_EQ(m.at("pairwise").at("median_gbps"), 1.0);
  EXPECT_DOUBLE_EQ(m.at("perf all_reduce").at("busbw@8K"), 0.0001);
  std::ofstream(path) << R"({"schema": "collie.perf.v1", "rows": []})";
  EXPECT_THROW(read_accept_metrics(path), InvalidArgument);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace collie::reports
