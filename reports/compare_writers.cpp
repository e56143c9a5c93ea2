#include "reports/compare_writers.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/size.h"
#include "reports/junit.h"
#include "reports/markup.h"

namespace collie::reports {

namespace {

int severity(Verdict v) {
  switch (v) {
    case Verdict::Regression:
      return 0;
    case Verdict::WrongData:
      return 1;
    case Verdict::Missing:
      return 2;
    case Verdict::Inconclusive:
      return 3;
    case Verdict::Improvement:
      return 4;
    case Verdict::New:
      return 5;
    case Verdict::Unchanged:
      return 6;
  }
  return 7;
}

std::vector<RowComparison> by_severity(std::vector<RowComparison> rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return severity(a.verdict) < severity(b.verdict);
  });
  return rows;
}

std::string unit(Metric m) { return m == Metric::BusBw ? "GB/s" : "us"; }

bool both_sides(const RowComparison& c) {
  return c.verdict != Verdict::Missing && c.verdict != Verdict::New;
}

// "12.3% worse", "4.0% better", "0.0%": the one sign convention of every compare output.
std::string worse_text(double worse) {
  if (std::abs(worse) < 0.0005) return "0.0%";
  return fmt::format("{:.1f}% {}", std::abs(worse) * 100, worse > 0 ? "worse" : "better");
}

std::string runs_text(const RowComparison& c) {
  return fmt::format("{} vs {}", c.base_runs, c.current_runs);
}

std::string current_label(const CompareReport& r) {
  if (r.current_paths.size() == 1) return r.current_paths.front();
  return fmt::format("{} runs ({} ...)", r.current_paths.size(), r.current_paths.front());
}

// "; whole sweep: regression" after the row counts, when the sweep was judged.
std::string sweep_count_text(const CompareReport& r) {
  return r.sweep ? fmt::format("; whole sweep: {}", verdict_name(r.sweep->verdict)) : "";
}

std::string counts_text(const CompareReport& r) {
  return fmt::format(
      "{} regression(s), {} wrong-data, {} missing, {} inconclusive, {} improvement(s), {} "
      "unchanged, {} new, {} below --min-size{}",
      r.regressions, r.wrong, r.missing, r.inconclusive, r.improvements, r.unchanged, r.added,
      r.skipped, sweep_count_text(r));
}

// The one line on what the baseline resolves for a row (or, `sweep`, for the whole sweep): the
// allowance used and why, the runs' noise, the smallest regression caught, and the runs that
// would resolve what was asked.
std::string resolution_text(const CompareReport& r, bool sweep = false) {
  const Resolution& z = sweep ? r.sweep_resolution : r.resolution;
  const CompareOptions& o = r.options;
  const std::string lead =
      sweep
          ? fmt::format("whole sweep (each run's geometric mean of {} rows): ", r.sweep->sweep_rows)
          : "";
  const char* what = sweep ? "the sweep" : "a row";
  const std::string asked =
      worse_text(o.max_regression) + (o.widen_to_baseline ? " (the default)" : "");
  if (z.noise <= 0)
    return fmt::format(
        "{}allowed {}; the baseline has 1 run per row, so its run-to-run noise and the smallest "
        "regression it can catch are unknown: make it from 3 or more runs (collie report "
        "baseline)",
        lead, asked);
  const std::string runs = fmt::format("{} vs {} runs", z.baseline_runs, z.current_runs);
  const std::string spread = fmt::format("its runs spread {:.1f}% run to run", z.noise * 100);
  const std::string more =
      z.runs_for_asked > 0   ? fmt::format("; {} runs per side would resolve {}", z.runs_for_asked,
                                           worse_text(o.max_regression))
      : z.runs_for_asked < 0 ? fmt::format("; not even 50 runs per side would resolve {}",
                                           worse_text(o.max_regression))
                             : "";
  const std::string catches = fmt::format("smallest regression {} catches 9 times in 10: {}", what,
                                          worse_text(z.detectable));
  if (z.allowance > o.max_regression)
    return fmt::format("{}allowed {}: {} widened to what this baseline resolves with {} ({}); {}{}",
                       lead, worse_text(z.allowance), asked, runs, spread, catches, more);
  if (z.resolvable > z.allowance)
    return fmt::format(
        "{}allowed {}; this baseline resolves only {} with {} ({}): {} of an unchanged build may "
        "come out inconclusive; {}{}",
        lead, asked, worse_text(z.resolvable), runs, spread, sweep ? "the sweep" : "rows", catches,
        more);
  return fmt::format("{}allowed {}; this baseline resolves {} with {} ({}); {}", lead, asked,
                     worse_text(z.resolvable), runs, spread, catches);
}

// Both resolution lines, one per line (the sweep's when there is one).
std::string resolution_lines(const CompareReport& r, const char* sep) {
  std::string s = resolution_text(r);
  if (r.sweep) s += sep + resolution_text(r, true);
  return s;
}

// The whole sweep's judgement (when there is one) and then every row's.
std::vector<RowComparison> judged(const CompareReport& r) {
  std::vector<RowComparison> all;
  if (r.sweep) all.push_back(*r.sweep);
  all.insert(all.end(), r.rows.begin(), r.rows.end());
  return all;
}

// The same by severity (the sweep leads among equals).
std::vector<RowComparison> table_rows(const CompareReport& r) { return by_severity(judged(r)); }

struct Cells {
  std::string verdict, row, base, current, change, allowed, runs, note;
};

std::string row_label(const RowComparison& c) {
  if (c.sweep_rows > 0) return fmt::format("whole sweep ({} rows)", c.sweep_rows);
  return fmt::format("{} {} {} {} {}{}", c.key.collective, c.key.dtype, c.key.redop,
                     c.key.placement, size_label(c.key.size_bytes),
                     c.key.root >= 0 ? fmt::format(" root {}", c.key.root) : "");
}

Cells cells_of(const RowComparison& c) {
  const bool both = both_sides(c);
  return Cells{verdict_name(c.verdict),
               row_label(c),
               c.verdict == Verdict::New ? "-" : num(c.base),
               c.verdict == Verdict::Missing ? "-" : num(c.current),
               both ? worse_text(c.worse) : "-",
               both ? worse_text(c.allowed) : "-",
               runs_text(c),
               c.note};
}

}  // namespace

std::string compare_summary_line(const CompareReport& r) {
  std::string s = fmt::format("collie report compare: {}: {} ({} vs {}, metric {}, allowed {})",
                              r.outcome(), counts_text(r), r.baseline_path, current_label(r),
                              metric_name(r.options.metric), worse_text(r.resolution.allowance));
  for (const std::string& why : r.incomplete) s += "; incomplete run: " + why;
  return s;
}

std::string compare_text(const CompareReport& r) {
  std::vector<Cells> rows;
  rows.push_back({"verdict", "row", "baseline", "current", "change", "allowed", "runs", "note"});
  for (const auto& c : table_rows(r)) rows.push_back(cells_of(c));
  size_t w[7] = {};
  for (const Cells& c : rows) {
    const std::string* f[7] = {&c.verdict, &c.row,     &c.base, &c.current,
                               &c.change,  &c.allowed, &c.runs};
    for (int i = 0; i < 7; ++i) w[i] = std::max(w[i], f[i]->size());
  }
  std::string s = fmt::format("collie report compare: {}\n", r.outcome());
  s += fmt::format(
      "baseline {}; current {}; {} {} ranks; metric {} ({}) of each run's {} iteration\n",
      r.baseline_path, current_label(r), r.backend, r.world_size, metric_name(r.options.metric),
      unit(r.options.metric), run_statistic_name(r.options.statistic));
  s += resolution_lines(r, "\n") + "\n";
  for (const std::string& why : r.incomplete) s += "incomplete run: " + why + "\n";
  s += counts_text(r) + "\n\n";
  for (const Cells& c : rows) {
    s += fmt::format("{:<{}}  {:<{}}  {:>{}}  {:>{}}  {:>{}}  {:>{}}  {:>{}}  {}", c.verdict, w[0],
                     c.row, w[1], c.base, w[2], c.current, w[3], c.change, w[4], c.allowed, w[5],
                     c.runs, w[6], c.note);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    s += "\n";
  }
  return s;
}

std::string compare_markdown(const CompareReport& r) {
  const CompareOptions& o = r.options;
  std::string s = fmt::format("# collie report compare: {}\n\n", r.outcome());
  s += fmt::format(
      "- baseline: `{}`\n- current: `{}`\n- backend {}, {} ranks; metric {} ({}); min size {}; "
      "judged on run-level values (each run's {} iteration)\n- {}\n",
      r.baseline_path, current_label(r), r.backend, r.world_size, metric_name(o.metric),
      unit(o.metric), size_label(o.min_size), run_statistic_name(o.statistic),
      md_cell(resolution_text(r)));
  if (r.sweep) s += "- " + md_cell(resolution_text(r, true)) + "\n";
  for (const std::string& why : r.incomplete) s += "- **incomplete run**: " + md_cell(why) + "\n";
  s += "\n" + counts_text(r) + ".\n\n";
  s += "| verdict | row | baseline | current | change | allowed | runs | note |\n";
  s += "|---|---|---:|---:|---:|---:|---:|---|\n";
  for (const auto& c : table_rows(r)) {
    const Cells x = cells_of(c);
    s += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", x.verdict, x.row, x.base,
                     x.current, x.change, x.allowed, x.runs, md_cell(x.note));
  }
  return s;
}

namespace {

// A row's (or the sweep's) verdict and numbers, the same keys for both.
nlohmann::json judgement_json(const RowComparison& c) {
  return {{"verdict", verdict_name(c.verdict)},
          {"baseline", c.base},
          {"current", c.current},
          {"change", c.change},
          {"worse", c.worse},
          {"worse_closest", c.worse_closest},
          {"allowed", c.allowed},
          {"baseline_runs", c.base_runs},
          {"current_runs", c.current_runs},
          {"note", c.note}};
}

}  // namespace

nlohmann::json compare_json(const CompareReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& c : r.rows) {
    nlohmann::json row = judgement_json(c);
    row.update({{"collective", c.key.collective},
                {"dtype", c.key.dtype},
                {"redop", c.key.redop},
                {"placement", c.key.placement},
                {"root", c.key.root},
                {"size_bytes", c.key.size_bytes}});
    rows.push_back(std::move(row));
  }
  nlohmann::json sweep = nullptr;
  if (r.sweep) {
    const Resolution& z = r.sweep_resolution;
    sweep = judgement_json(*r.sweep);
    sweep.update({{"rows", r.sweep->sweep_rows},
                  {"resolution",
                   {{"noise", z.noise},
                    {"resolvable", z.resolvable},
                    {"detectable", z.detectable},
                    {"runs_for_asked", z.runs_for_asked},
                    {"text", resolution_text(r, true)}}}});
  }
  return {{"schema", "collie.compare.v2"},
          {"outcome", r.outcome()},
          {"passed", !r.failed()},
          {"baseline", r.baseline_path},
          {"current", r.current_paths},
          {"backend", r.backend},
          {"world_size", r.world_size},
          {"metric", metric_name(r.options.metric)},
          {"statistic", run_statistic_name(r.options.statistic)},
          {"max_regression", r.options.max_regression},
          {"allowed", r.resolution.allowance},
          {"resolution",
           {{"widened_default", r.options.widen_to_baseline},
            {"noise", r.resolution.noise},
            {"resolvable", r.resolution.resolvable},
            {"detectable", r.resolution.detectable},
            {"baseline_runs", r.resolution.baseline_runs},
            {"current_runs", r.resolution.current_runs},
            {"runs_for_asked", r.resolution.runs_for_asked},
            {"text", resolution_text(r)}}},
          {"min_size", r.options.min_size},
          {"incomplete", r.incomplete},
          {"counts",
           {{"regression", r.regressions},
            {"wrong_data", r.wrong},
            {"missing", r.missing},
            {"inconclusive", r.inconclusive},
            {"improvement", r.improvements},
            {"unchanged", r.unchanged},
            {"new", r.added},
            {"skipped", r.skipped}}},
          {"sweep", sweep},
          {"rows", rows}};
}

std::string compare_junit(const CompareReport& r) {
  JunitSuite su;
  su.name = "collie.compare." + r.backend;
  su.properties = {{"baseline", r.baseline_path},
                   {"current", current_label(r)},
                   {"metric", metric_name(r.options.metric)},
                   {"allowed", worse_text(r.resolution.allowance)},
                   {"resolution", resolution_lines(r, "; ")}};
  for (const std::string& why : r.incomplete) {
    JunitCase& t = su.cases.emplace_back();
    t.name = "run complete";
    t.classname = "collie.compare.runs";
    t.outcome = JunitCase::Outcome::Failure;
    t.type = "incomplete";
    t.message = "incomplete run: " + why;
  }
  for (const auto& c : judged(r)) {
    JunitCase& t = su.cases.emplace_back();
    t.name = c.sweep_rows > 0 ? row_label(c) : describe(c.key);
    t.classname = "collie.compare." + (c.sweep_rows > 0 ? "sweep" : c.key.collective);
    const Cells x = cells_of(c);
    const std::string detail =
        fmt::format("{} {} -> {} {} ({}, allowed {}, runs {}){}", metric_name(r.options.metric),
                    x.base, x.current, unit(r.options.metric), x.change, x.allowed, x.runs,
                    c.note.empty() ? "" : "; " + c.note);
    switch (c.verdict) {
      case Verdict::Regression:
      case Verdict::WrongData:
      case Verdict::Missing:
        t.outcome = JunitCase::Outcome::Failure;
        t.type = verdict_name(c.verdict);
        t.message = std::string(verdict_name(c.verdict)) + ": " + detail;
        break;
      case Verdict::Inconclusive:
      case Verdict::New:
        t.outcome = JunitCase::Outcome::Skipped;
        t.message = std::string(verdict_name(c.verdict)) + ": " + detail;
        break;
      case Verdict::Improvement:
      case Verdict::Unchanged:
        t.system_out = std::string(verdict_name(c.verdict)) + ": " + detail;
        break;
    }
  }
  return junit_xml("collie report compare", {su});
}

}  // namespace collie::reports
