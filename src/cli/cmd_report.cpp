// `collie report render|compare|baseline`: reads result files and writes reports or gates a CI
// job. Thin: flag parsing and exit codes here, everything else in reports/. Exit codes: 0 pass,
// 1 fail (compare: regression, wrong data, missing rows, an incomplete run), 2 unusable input or
// bad flags (one line on stderr), 6 inconclusive (compare: more runs decide).
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/exit_codes.h"
#include "core/printable.h"
#include "core/size.h"
#include "reports/baseline.h"
#include "reports/compare_writers.h"
#include "reports/html_report.h"
#include "reports/markup.h"
#include "reports/render.h"
#include "reports/resolution.h"

namespace collie::cli {
namespace {

using namespace collie::reports;

struct ReportFlags {
  std::vector<std::string> inputs;
  std::string format, output;
  std::string baseline, max_regression, min_size = "0", metric = "busbw", statistic = "p10";
  std::vector<std::string> current;
};

void write_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  write_file_atomic(path, text);
}

// "5%" or "5" = 5 percent; the fraction 0.05 is returned.
double parse_percent(const std::string& text) {
  const std::string num = text.ends_with('%') ? text.substr(0, text.size() - 1) : text;
  try {
    return parse_finite(num, "--max-regression", 0, 1e6) / 100;
  } catch (const InvalidArgument&) {
    throw InvalidArgument("--max-regression " + quote(text) +
                          " is not a percentage in 0..1000000 (e.g. 5%)");
  }
}

int run_render(const ReportFlags& f) {
  const std::vector<LoadedRun> runs = load_runs(f.inputs);
  if (f.format == "html") {
    write_output(f.output, render_html(runs));
  } else if (f.format == "md") {
    write_output(f.output, render_markdown(runs));
  } else if (f.format == "junit") {
    write_output(f.output, render_junit(runs));
  } else if (f.format == "table") {
    write_output(f.output, render_table(runs));
  } else {
    write_output(f.output, render_csv(runs));
  }
  return kExitOk;
}

int run_compare(const ReportFlags& f) {
  CompareOptions o;
  // Not given: 5 %, widened to what the baseline resolves (reports/compare.h).
  o.widen_to_baseline = f.max_regression.empty();
  if (!o.widen_to_baseline) o.max_regression = parse_percent(f.max_regression);
  o.min_size = parse_byte_size(f.min_size, "--min-size");
  o.metric = f.metric == "time" ? Metric::Time : Metric::BusBw;
  o.statistic = f.statistic == "p50" ? RunStatistic::P50 : RunStatistic::P10;
  const LoadedRun base = load_run(f.baseline);
  std::vector<LoadedRun> cur;
  for (const std::string& p : f.current) cur.push_back(load_run(p));
  const CompareReport rep = compare_runs(base, cur, o);
  if (f.format == "json")
    write_output(f.output, compare_json(rep).dump(2) + "\n");
  else if (f.format == "junit")
    write_output(f.output, compare_junit(rep));
  else if (f.format == "md")
    write_output(f.output, compare_markdown(rep));
  else
    write_output(f.output, compare_text(rep));
  std::fprintf(stderr, "%s\n", compare_summary_line(rep).c_str());
  if (rep.failed()) return kExitFailure;
  return rep.undecided() ? kExitInconclusive : kExitOk;
}

int run_baseline(const ReportFlags& f) {
  const std::vector<LoadedRun> runs = load_runs(f.inputs);
  const LoadedRun b = make_baseline(runs);
  write_output(f.output, baseline_to_json(b, f.inputs).dump(2) + "\n");
  // What it resolves: the allowance `report compare` widens its default to, with as many
  // current runs as this baseline has.
  std::vector<std::vector<double>> values;
  for (const RowSpread& sp : b.spread) values.push_back(sp.run_p10_us);
  const int n = static_cast<int>(runs.size());
  const Resolution z =
      resolve(values, n, static_cast<int>(values.size()), 0.05, true, Metric::BusBw);
  std::string resolves = "; one run shows no run-to-run noise: give it 3 or more";
  if (z.noise > 0)
    resolves = fmt::format(
        "; its runs spread {:.1f}% run to run: against {} current runs it resolves {:.1f}% (busbw, "
        "p10), and a row catches a {:.1f}% regression 9 times in 10",
        z.noise * 100, n, z.resolvable * 100, z.detectable * 100);
  std::fprintf(stderr, "collie report baseline: %zu rows from %zu runs -> %s%s\n",
               b.result.rows.size(), runs.size(), f.output.c_str(), resolves.c_str());
  return kExitOk;
}

const Command kCommand{
    "report", "render result files (html, md, csv, junit, table) and gate CI on regressions",
    [](CLI::App& app) {
      auto f = std::make_shared<ReportFlags>();
      auto chosen = std::make_shared<std::string>();
      app.require_subcommand(1);

      CLI::App* render = app.add_subcommand("render", "render results side by side");
      render->add_option("results", f->inputs, "results JSON files (collie perf -J)")->required();
      render->add_option("--format", f->format, "html | md | csv | junit | table")
          ->required()
          ->check(CLI::IsMember({"html", "md", "csv", "junit", "table"}));
      render->add_option("-o,--output", f->output, "output file (default: stdout)");
      render->callback([chosen] { *chosen = "render"; });

      CLI::App* compare = app.add_subcommand(
          "compare",
          "compare CURRENT runs against BASELINE; exit 1 on a regression, wrong data, a missing "
          "row or an incomplete run, 6 when more runs are needed to decide, 2 on bad input");
      compare
          ->add_option("baseline", f->baseline, "baseline file (collie report baseline) or results")
          ->required();
      compare->add_option("current", f->current, "current results, one file per run")->required();
      compare->add_option("--max-regression", f->max_regression,
                          "allowed worsening per row and of the whole sweep, e.g. 5% (default: 5%, "
                          "widened to what the "
                          "baseline's runs resolve)");
      compare->add_option("--min-size", f->min_size, "ignore rows below this size (K/M/G)");
      compare->add_option("--metric", f->metric, "busbw (default) | time")
          ->check(CLI::IsMember({"busbw", "time"}));
      compare
          ->add_option("--statistic", f->statistic,
                       "each run's value: p10 (default: what the build can do, robust to a "
                       "shared machine's noise) | p50 (also sees stalls in some iterations)")
          ->check(CLI::IsMember({"p10", "p50"}));
      compare->add_option("--format", f->format, "text (default) | md | json | junit")
          ->check(CLI::IsMember({"text", "md", "json", "junit"}));
      compare->add_option("-o,--output", f->output, "output file (default: stdout)");
      compare->callback([chosen] { *chosen = "compare"; });

      CLI::App* baseline =
          app.add_subcommand("baseline", "combine runs into a baseline (median per row)");
      baseline->add_option("runs", f->inputs, "results JSON files of the same configuration")
          ->required();
      baseline->add_option("-o,--output", f->output, "baseline file to write")->required();
      baseline->callback([chosen] { *chosen = "baseline"; });

      return [f, chosen]() -> int {
        if (*chosen == "render") return run_render(*f);
        if (*chosen == "compare") return run_compare(*f);
        return run_baseline(*f);
      };
    }};

}  // namespace

const Command& report_command() { return kCommand; }

}  // namespace collie::cli
