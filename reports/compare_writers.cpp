#include "reports/compare_writers.h"

#include <fmt/format.h>

#include <algorithm>

#include "reports/junit.h"
#include "reports/markup.h"

namespace collie::reports {

namespace {

int severity(Verdict v) {
  switch (v) {
    case Verdict::Regression:
      return 0;
    case Verdict::Missing:
      return 1;
    case Verdict::Improvement:
      return 2;
    case Verdict::New:
      return 3;
    case Verdict::Unchanged:
      return 4;
  }
  return 5;
}

std::vector<RowComparison> by_severity(const CompareReport& r) {
  std::vector<RowComparison> rows = r.rows;
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return severity(a.verdict) < severity(b.verdict);
  });
  return rows;
}

std::string method_cell(const RowComparison& c) {
  if (c.method == "mann-whitney") return fmt::format("mann-whitney p={:.2g}", c.p);
  return c.method.empty() ? "-" : c.method;
}

std::string unit(Metric m) { return m == Metric::BusBw ? "GB/s" : "us"; }

}  // namespace

std::string compare_summary_line(const CompareReport& r) {
  return fmt::format(
      "collie report compare: {}: {} regression(s), {} improvement(s), {} unchanged, {} missing, "
      "{} new, {} below --min-size ({} vs {}, metric {}, max regression {})",
      r.passed() ? "PASS" : "FAIL", r.regressions, r.improvements, r.unchanged, r.missing, r.added,
      r.skipped, r.baseline_path, r.current_path, metric_name(r.options.metric),
      percent(r.options.max_regression));
}

std::string compare_markdown(const CompareReport& r) {
  const CompareOptions& o = r.options;
  std::string s = fmt::format("# collie report compare: {}\n\n", r.passed() ? "PASS" : "FAIL");
  s += fmt::format(
      "- baseline: `{}`\n- current: `{}`\n- backend {}, {} ranks; metric {} ({}); max regression "
      "{}; min size {}; rank test at p < {} with >= {} samples per side\n\n",
      r.baseline_path, r.current_path, r.backend, r.world_size, metric_name(o.metric),
      unit(o.metric), percent(o.max_regression), size_label(o.min_size), o.alpha, o.min_samples);
  s += fmt::format(
      "**{} regression(s)**, {} improvement(s), {} unchanged, {} missing, {} new, {} below min "
      "size.\n\n",
      r.regressions, r.improvements, r.unchanged, r.missing, r.added, r.skipped);
  s += "| verdict | collective | dtype | op | placement | root | size | baseline | current | "
       "change | allowed | method |\n";
  s += "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---|\n";
  for (const auto& c : by_severity(r)) {
    const bool both = c.verdict != Verdict::Missing && c.verdict != Verdict::New;
    s += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", verdict_name(c.verdict),
        c.key.collective, c.key.dtype, c.key.redop, c.key.placement, c.key.root,
        size_label(c.key.size_bytes), c.verdict == Verdict::New ? "-" : num(c.base),
        c.verdict == Verdict::Missing ? "-" : num(c.current), both ? percent(c.change) : "-",
        both ? percent(c.threshold) : "-", method_cell(c));
  }
  return s;
}

nlohmann::json compare_json(const CompareReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& c : r.rows) {
    rows.push_back({{"collective", c.key.collective},
                    {"dtype", c.key.dtype},
                    {"redop", c.key.redop},
                    {"placement", c.key.placement},
                    {"root", c.key.root},
                    {"size_bytes", c.key.size_bytes},
                    {"verdict", verdict_name(c.verdict)},
                    {"baseline", c.base},
                    {"current", c.current},
                    {"change", c.change},
                    {"worse", c.worse},
                    {"allowed", c.threshold},
                    {"method", c.method},
                    {"p", c.p >= 0 ? nlohmann::json(c.p) : nlohmann::json(nullptr)}});
  }
  return {{"schema", "collie.compare.v1"},
          {"passed", r.passed()},
          {"baseline", r.baseline_path},
          {"current", r.current_path},
          {"backend", r.backend},
          {"world_size", r.world_size},
          {"metric", metric_name(r.options.metric)},
          {"max_regression", r.options.max_regression},
          {"min_size", r.options.min_size},
          {"alpha", r.options.alpha},
          {"counts",
           {{"regression", r.regressions},
            {"improvement", r.improvements},
            {"unchanged", r.unchanged},
            {"missing", r.missing},
            {"new", r.added},
            {"skipped", r.skipped}}},
          {"rows", rows}};
}

std::string compare_junit(const CompareReport& r) {
  JunitSuite su;
  su.name = "collie.compare." + r.backend;
  su.properties = {{"baseline", r.baseline_path},
                   {"current", r.current_path},
                   {"metric", metric_name(r.options.metric)},
                   {"max_regression", percent(r.options.max_regression)}};
  for (const auto& c : r.rows) {
    JunitCase& t = su.cases.emplace_back();
    t.name = describe(c.key);
    t.classname = "collie.compare." + c.key.collective;
    const std::string detail =
        fmt::format("{} {} -> {} {} ({}, allowed {}, {})", metric_name(r.options.metric),
                    num(c.base), num(c.current), unit(r.options.metric), percent(c.change),
                    percent(c.threshold), method_cell(c));
    if (c.verdict == Verdict::Regression) {
      t.outcome = JunitCase::Outcome::Failure;
      t.message = "regression: " + detail;
      t.type = "regression";
    } else if (c.verdict == Verdict::Missing || c.verdict == Verdict::New) {
      t.outcome = JunitCase::Outcome::Skipped;
      t.message = c.verdict == Verdict::Missing ? "row missing in the current run"
                                                : "row not in the baseline";
    } else {
      t.system_out = std::string(verdict_name(c.verdict)) + ": " + detail;
    }
  }
  return junit_xml("collie report compare", {su});
}

}  // namespace collie::reports
