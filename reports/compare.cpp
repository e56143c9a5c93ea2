#include "reports/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"

namespace collie::reports {

const char* metric_name(Metric m) { return m == Metric::BusBw ? "busbw" : "time"; }

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Regression:
      return "regression";
    case Verdict::Improvement:
      return "improvement";
    case Verdict::Unchanged:
      return "unchanged";
    case Verdict::Inconclusive:
      return "inconclusive";
    case Verdict::WrongData:
      return "wrong-data";
    case Verdict::Missing:
      return "missing";
    case Verdict::New:
      return "new";
  }
  return "?";
}

const char* CompareReport::outcome() const {
  if (failed()) return "FAIL";
  return undecided() ? "INCONCLUSIVE" : "PASS";
}

namespace {

// One row's evidence on one side: a representative row and each run's time.
struct RowRuns {
  ResultRow row;
  std::vector<double> times_us;
  std::string wrong;     // "#wrong 3 in cur.json" when a run reported wrong elements
  bool per_run = false;  // times_us[i] is run i's value (not an older baseline's min and max)
};

std::string file_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

void note_wrong(RowRuns& rr, const ResultRow& r, const std::string& path) {
  if (r.wrong <= 0) return;
  if (!rr.wrong.empty()) rr.wrong += "; ";
  rr.wrong += fmt::format("#wrong {} in {}", r.wrong, file_name(path));
}

// The baseline's runs per key: the per-run times `collie report baseline` recorded, the min and
// max of an older baseline file, or the one run of a plain results file.
std::map<RowKey, RowRuns> baseline_side(const LoadedRun& b, RunStatistic st,
                                        std::vector<RowKey>& order) {
  std::map<RowKey, const RowSpread*> spread;
  if (b.baseline_runs > 0 && b.spread.size() == b.result.rows.size()) {
    for (size_t i = 0; i < b.spread.size(); ++i) spread[key_of(b.result.rows[i])] = &b.spread[i];
  }
  std::map<RowKey, RowRuns> side;
  for (ResultRow& r : rows_of_run(b)) {
    const RowKey k = key_of(r);
    order.push_back(k);
    RowRuns& rr = side[k];
    note_wrong(rr, r, b.path);
    auto s = spread.find(k);
    const std::vector<double>* recorded = nullptr;
    if (s != spread.end())
      recorded = st == RunStatistic::P10 ? &s->second->run_p10_us : &s->second->run_p50_us;
    if (recorded != nullptr && !recorded->empty()) {
      rr.times_us = *recorded;
      rr.per_run = static_cast<int>(recorded->size()) == b.baseline_runs;
    } else if (s != spread.end() && s->second->runs >= 2) {
      const bool p50 = s->second->p50_max_us > 0;
      rr.times_us = {p50 ? s->second->p50_min_us : s->second->time_min_us,
                     p50 ? s->second->p50_max_us : s->second->time_max_us};
    } else {
      rr.times_us = {run_value_of(r, st)};
      rr.per_run = b.baseline_runs <= 1;
    }
    rr.row = std::move(r);
  }
  return side;
}

std::map<RowKey, RowRuns> current_side(const std::vector<LoadedRun>& runs, RunStatistic st,
                                       std::vector<RowKey>& order) {
  std::map<RowKey, RowRuns> side;
  for (const LoadedRun& run : runs) {
    for (ResultRow& r : rows_of_run(run)) {
      const RowKey k = key_of(r);
      auto [it, added] = side.try_emplace(k);
      if (added) order.push_back(k);
      RowRuns& rr = it->second;
      note_wrong(rr, r, run.path);
      rr.times_us.push_back(run_value_of(r, st));
      if (added) rr.row = std::move(r);
    }
  }
  for (auto& [k, rr] : side) rr.per_run = rr.times_us.size() == runs.size();
  return side;
}

// The metric of `row` had its time per call been `t_us`.
double metric_at(const ResultRow& row, double t_us, Metric m) {
  if (m == Metric::Time) return t_us;
  return t_us > 0 && row.time_us > 0 ? row.busbw_gbps * row.time_us / t_us : row.busbw_gbps;
}

// Relative worsening in the metric when the time goes from tb to tc (< 0: better).
double worsening(double tb, double tc, Metric m) {
  if (tb <= 0 || tc <= 0) return 0;
  return m == Metric::Time ? tc / tb - 1 : 1 - tb / tc;
}

void judge(RowComparison& c, const RowRuns& b, const RowRuns& cur, const CompareOptions& o,
           const Resolution& res) {
  const double allowed = res.allowance;
  const Metric m = o.metric;
  const double tb = median(b.times_us), tc = median(cur.times_us);
  const auto [bmin, bmax] = std::minmax_element(b.times_us.begin(), b.times_us.end());
  const auto [cmin, cmax] = std::minmax_element(cur.times_us.begin(), cur.times_us.end());
  c.base_runs = static_cast<int>(b.times_us.size());
  c.current_runs = static_cast<int>(cur.times_us.size());
  c.base = metric_at(b.row, tb, m);
  c.current = metric_at(cur.row, tc, m);
  c.change = c.base != 0 ? c.current / c.base - 1 : 0;
  c.worse = worsening(tb, tc, m);
  c.allowed = allowed;
  if (!b.wrong.empty() || !cur.wrong.empty()) {
    c.verdict = Verdict::WrongData;
    c.note = cur.wrong.empty() ? "baseline: " + b.wrong : cur.wrong;
    return;
  }
  if (std::abs(c.worse) <= c.allowed) {
    c.verdict = Verdict::Unchanged;
    return;
  }
  const bool worse = c.worse > 0;
  // The pairing of runs least favourable to a change: best current vs worst baseline run.
  c.worse_closest = worse ? worsening(*bmax, *cmin, m) : worsening(*bmin, *cmax, m);
  // Each side needs runs of its own: one run, however far off, may have sat in a noisy moment
  // (a busy neighbour for the whole row), and nothing on its side shows it.
  const bool enough_runs = c.base_runs >= 2 && c.current_runs >= 2;
  const bool separated = worse ? c.worse_closest > c.allowed : -c.worse_closest > c.allowed;
  // The median runs must also differ by more than this baseline's noise produces by chance
  // (resolution.h): with an allowance asked below that, every run of 3 can still come out beyond
  // it now and then on an unchanged build (a CI run saw 29 % at 15 %, the baseline resolving 37 %).
  const bool beyond_noise = std::abs(c.worse) > res.resolvable;
  if (enough_runs && separated && beyond_noise) {
    c.verdict = worse ? Verdict::Regression : Verdict::Improvement;
    c.note = fmt::format("every run {} by more than allowed", worse ? "worse" : "better");
    return;
  }
  if (!worse) {
    // Whether it improved is undecided, but it did not regress: nothing for a gate to stop on.
    c.verdict = Verdict::Unchanged;
    c.note = !enough_runs ? "better by more than allowed on a side with one run: not a regression"
             : separated  ? "better by more than allowed, within what this baseline's noise makes "
                            "by chance: not a regression"
                         : "better by more than allowed, within the runs' spread: not a regression";
    return;
  }
  c.verdict = Verdict::Inconclusive;
  if (enough_runs && separated) {
    c.note = fmt::format(
        "every run worse by more than allowed, but within what this baseline's noise makes by "
        "chance ({:.1f}% worse): more runs decide",
        100 * res.resolvable);
    return;
  }
  c.note = !enough_runs ? fmt::format(
                              "{} vs {} runs: a side with one run cannot show its noise; give each "
                              "side 2 or more runs",
                              c.base_runs, c.current_runs)
                        : "runs overlap: the change is within the runs' spread, more runs decide";
}

// The geometric mean of `values` (all > 0: check_gate_times refused anything else).
double geomean(const std::vector<double>& values) {
  double logs = 0;
  for (double v : values) logs += std::log(v);
  return std::exp(logs / static_cast<double>(values.size()));
}

// The whole sweep on one side: run i's value is the geometric mean of run i's values over `keys`.
RowRuns sweep_side(const std::map<RowKey, RowRuns>& side, const std::vector<RowKey>& keys) {
  RowRuns s;
  s.per_run = true;
  const size_t runs = side.at(keys.front()).times_us.size();
  std::vector<double> at_run(keys.size()), times(keys.size()), busbw(keys.size());
  for (size_t i = 0; i < runs; ++i) {
    for (size_t k = 0; k < keys.size(); ++k) at_run[k] = side.at(keys[k]).times_us[i];
    s.times_us.push_back(geomean(at_run));
  }
  bool bw = true;
  for (size_t k = 0; k < keys.size(); ++k) {
    const ResultRow& r = side.at(keys[k]).row;
    times[k] = r.time_us;
    busbw[k] = r.busbw_gbps;
    bw = bw && r.busbw_gbps > 0;
  }
  s.row.time_us = geomean(times);  // metric_at scales the shown busbw by the runs' values
  s.row.busbw_gbps = bw ? geomean(busbw) : 0;
  return s;
}

// The run that sits apart from the others of its side over the whole sweep (>= 3 runs): its value
// differs from the others' median by more than 5 % and by more than 3 times the others' own
// range. Returns its index, or -1; `apart` gets its value / the others' median - 1.
int run_apart(const std::vector<double>& values, double& apart) {
  if (values.size() < 3) return -1;
  int found = -1;
  double farthest = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    std::vector<double> others;
    for (size_t j = 0; j < values.size(); ++j)
      if (j != i) others.push_back(std::log(values[j]));
    const auto [lo, hi] = std::minmax_element(others.begin(), others.end());
    const double d = std::log(values[i]) - median(others);
    if (std::abs(d) > std::max(std::log(1.05), 3 * (*hi - *lo)) && std::abs(d) > farthest) {
      farthest = std::abs(d);
      found = static_cast<int>(i);
      apart = std::expm1(d);
    }
  }
  return found;
}

// "; baseline run b2.json took 14.2% longer than its other 2 runs over the whole sweep (...)".
std::string apart_note(const RowRuns& side, const std::vector<std::string>& names,
                       const char* which, const char* advice) {
  double apart = 0;
  const int i = run_apart(side.times_us, apart);
  if (i < 0) return "";
  const std::string name = i < static_cast<int>(names.size())
                               ? file_name(names[i])
                               : fmt::format("{} of {}", i + 1, side.times_us.size());
  return fmt::format(
      "; {} run {} took {:.1f}% {} than its other {} runs over the whole sweep (a busy spell "
      "slows every row of a run alike){}",
      which, name, std::abs(apart) * 100, apart > 0 ? "longer" : "less", side.times_us.size() - 1,
      apart > 0 ? advice : "");
}

// Judges the whole sweep (compare.h) over the rows that both sides measured in every run.
void judge_sweep(CompareReport& rep, const std::map<RowKey, RowRuns>& b,
                 const std::map<RowKey, RowRuns>& c, const std::vector<RowKey>& border,
                 const std::vector<std::string>& baseline_sources, const CompareOptions& o) {
  // per_run rows all hold one value per run of their side (the baseline's runs, or its one run).
  std::vector<RowKey> keys;
  for (const RowKey& k : border) {
    auto it = c.find(k);
    if (k.size_bytes < o.min_size || it == c.end()) continue;
    const RowRuns &rb = b.at(k), &rc = it->second;
    if (rb.per_run && rc.per_run && rb.wrong.empty() && rc.wrong.empty()) keys.push_back(k);
  }
  if (keys.size() < 2) return;
  const RowRuns sb = sweep_side(b, keys), sc = sweep_side(c, keys);
  rep.sweep_resolution = resolve({sb.times_us}, static_cast<int>(sc.times_us.size()), 1,
                                 o.max_regression, o.widen_to_baseline, o.metric);
  RowComparison rc;
  rc.sweep_rows = static_cast<int>(keys.size());
  judge(rc, sb, sc, o, rep.sweep_resolution);
  // Name a run that sits apart: one slowed run widens what a side resolves, or decides a verdict.
  std::string apart = apart_note(sb, baseline_sources, "baseline",
                                 ": remake the baseline without it, or with more runs") +
                      apart_note(sc, rep.current_paths, "current", ": run it again");
  if (!apart.empty()) rc.note += rc.note.empty() ? apart.substr(2) : apart;
  rep.sweep = std::move(rc);
}

void count(CompareReport& rep, Verdict v) {
  switch (v) {
    case Verdict::Regression:
      ++rep.regressions;
      break;
    case Verdict::Improvement:
      ++rep.improvements;
      break;
    case Verdict::Unchanged:
      ++rep.unchanged;
      break;
    case Verdict::Inconclusive:
      ++rep.inconclusive;
      break;
    case Verdict::WrongData:
      ++rep.wrong;
      break;
    case Verdict::Missing:
      ++rep.missing;
      break;
    case Verdict::New:
      ++rep.added;
      break;
  }
}

}  // namespace

CompareReport compare_runs(const LoadedRun& base, const std::vector<LoadedRun>& current,
                           const CompareOptions& opts) {
  constexpr const char* kAdvice = "compare runs of the same configuration";
  for (const LoadedRun& cur : current) {
    check_same_configuration(base, cur, kAdvice);
    check_same_configuration(current.front(), cur, kAdvice);
  }
  if (std::string why = incomplete_reason(base); !why.empty())
    throw InvalidArgument("baseline " + why +
                          ": its rows are not a complete measurement; make the baseline from "
                          "complete runs");
  check_gate_times(base);
  for (const LoadedRun& cur : current) check_gate_times(cur);
  CompareReport rep;
  rep.baseline_path = base.path;
  for (const LoadedRun& cur : current) {
    rep.current_paths.push_back(cur.path);
    if (std::string why = incomplete_reason(cur); !why.empty()) rep.incomplete.push_back(why);
  }
  rep.backend = base.result.meta.backend;
  rep.world_size = base.result.meta.world_size;
  rep.options = opts;
  std::vector<RowKey> border, corder;
  const std::map<RowKey, RowRuns> b = baseline_side(base, opts.statistic, border);
  const std::map<RowKey, RowRuns> c = current_side(current, opts.statistic, corder);
  // What the baseline's runs resolve on the rows this comparison judges.
  std::vector<std::vector<double>> noise_rows;
  for (const RowKey& k : border)
    if (k.size_bytes >= opts.min_size && c.count(k)) noise_rows.push_back(b.at(k).times_us);
  rep.resolution =
      resolve(noise_rows, static_cast<int>(current.size()), static_cast<int>(noise_rows.size()),
              opts.max_regression, opts.widen_to_baseline, opts.metric);
  int matched = 0;
  for (const RowKey& k : border) {
    if (k.size_bytes < opts.min_size) {
      ++rep.skipped;
      continue;
    }
    RowComparison rc;
    rc.key = k;
    auto it = c.find(k);
    if (it == c.end()) {
      rc.verdict = Verdict::Missing;
      rc.base = metric_at(b.at(k).row, median(b.at(k).times_us), opts.metric);
      rc.base_runs = static_cast<int>(b.at(k).times_us.size());
      rc.note = "no current run has this row";
    } else {
      ++matched;
      judge(rc, b.at(k), it->second, opts, rep.resolution);
    }
    count(rep, rc.verdict);
    rep.rows.push_back(std::move(rc));
  }
  for (const RowKey& k : corder) {
    if (b.count(k)) continue;
    if (k.size_bytes < opts.min_size) {
      ++rep.skipped;
      continue;
    }
    RowComparison rc;
    rc.key = k;
    rc.verdict = Verdict::New;
    rc.current = metric_at(c.at(k).row, median(c.at(k).times_us), opts.metric);
    rc.current_runs = static_cast<int>(c.at(k).times_us.size());
    rc.note = "not in the baseline";
    count(rep, rc.verdict);
    rep.rows.push_back(std::move(rc));
  }
  judge_sweep(rep, b, c, border, base.baseline_sources, opts);
  if (matched == 0)
    throw InvalidArgument("no row of " + current.front().path + " matches a row of baseline " +
                          base.path + (opts.min_size > 0 ? " at or above --min-size" : "") +
                          " (same collective, dtype, op, placement, size); run the same sweep");
  return rep;
}

}  // namespace collie::reports
