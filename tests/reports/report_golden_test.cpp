// Golden-file tests of every report format. The inputs are real `collie perf -I` results from
// tests/reports/golden/ (see README.md there). Regenerate the goldens after an intended format
// change with COLLIE_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

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

TEST_F(ReportGolden, Csv) {
  const std::string out = ::testing::TempDir() + "report_golden.csv";
  render_csv_file(inputs(), out);
  check("report_render.csv", slurp(out));
  std::remove(out.c_str());
}

TEST_F(ReportGolden, CompareFormats) {
  const LoadedRun base = load_run("report_input_gloo4.json");
  LoadedRun cur = base;
  cur.path = "report_input_gloo4_slow.json";
  // Row 0 4x slower (samples and mean): the only regression.
  ResultRow& r = cur.result.rows[0];
  for (double& s : r.samples_us) s *= 4;
  r.time_us *= 4;
  r.busbw_gbps /= 4;
  r.algbw_gbps /= 4;
  const CompareReport rep = compare_runs(base, cur, {});
  EXPECT_EQ(rep.regressions, 1);
  check("report_compare.md", compare_markdown(rep));
  check("report_compare.json", compare_json(rep).dump(2) + "\n");
  check("report_compare.junit.xml", compare_junit(rep));
}

}  // namespace
}  // namespace collie::reports
