#include "reports/compare.h"

#include <algorithm>
#include <map>

#include "core/error.h"
#include "reports/stats.h"

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
    case Verdict::Missing:
      return "missing";
    case Verdict::New:
      return "new";
  }
  return "?";
}

namespace {

double metric_of(const ResultRow& r, Metric m) {
  return m == Metric::BusBw ? r.busbw_gbps : r.time_us;
}

// Relative worsening from `base` to `cur` of a metric where larger is better (busbw) or worse.
double worsening(double base, double cur, bool larger_is_better) {
  if (base <= 0) return 0;
  return larger_is_better ? (base - cur) / base : (cur - base) / base;
}

double spread_of(const RowSpread& s, double base, Metric m) {
  if (s.runs < 2 || base <= 0) return 0;
  return m == Metric::BusBw ? (s.busbw_max_gbps - s.busbw_min_gbps) / base
                            : (s.time_max_us - s.time_min_us) / base;
}

CombinedRows combined(const LoadedRun& run, std::vector<RowSpread>* spread) {
  std::vector<const ResultRow*> rows;
  for (const auto& r : run.result.rows) rows.push_back(&r);
  CombinedRows c = combine_rows(rows);
  // A baseline file already holds one row per key with its recorded spread; keep that spread.
  if (run.baseline_runs > 0 && run.spread.size() == run.result.rows.size()) c.spread = run.spread;
  *spread = c.spread;
  return c;
}

void classify(RowComparison& c, const ResultRow& b, const ResultRow& cur, const RowSpread& bs,
              const CompareOptions& o) {
  const Metric m = o.metric;
  c.base = metric_of(b, m);
  c.current = metric_of(cur, m);
  c.change = c.base != 0 ? c.current / c.base - 1 : 0;
  c.threshold = std::max(o.max_regression, spread_of(bs, c.base, m));
  const int n = o.min_samples;
  bool significant = true;
  if (static_cast<int>(b.samples_us.size()) >= n && static_cast<int>(cur.samples_us.size()) >= n) {
    // Samples are per-iteration times; busbw is inversely proportional to time at a fixed size,
    // so the effect on either metric follows from the ratio of the sample medians.
    c.method = "mann-whitney";
    const MannWhitney t = mann_whitney_u(cur.samples_us, b.samples_us);
    c.p = t.p;
    significant = t.p < o.alpha;
    const double tb = median(b.samples_us), tc = median(cur.samples_us);
    c.worse = m == Metric::Time ? worsening(tb, tc, false) : (tc > 0 ? 1 - tb / tc : 0);
    // Run-to-run spread of the median time, expressed in the metric (a time increase of s is a
    // bandwidth drop of s / (1 + s)).
    if (bs.runs >= 2 && tb > 0 && bs.p50_max_us > 0) {
      const double st = (bs.p50_max_us - bs.p50_min_us) / tb;
      c.threshold = std::max(o.max_regression, m == Metric::Time ? st : st / (1 + st));
    }
  } else {
    c.method = "threshold";
    c.worse = worsening(c.base, c.current, m == Metric::BusBw);
  }
  if (significant && c.worse > c.threshold)
    c.verdict = Verdict::Regression;
  else if (significant && -c.worse > c.threshold)
    c.verdict = Verdict::Improvement;
  else
    c.verdict = Verdict::Unchanged;
}

}  // namespace

CompareReport compare_runs(const LoadedRun& base, const LoadedRun& cur,
                           const CompareOptions& opts) {
  const RunMeta &bm = base.result.meta, &cm = cur.result.meta;
  auto mismatch = [&](const std::string& what, const std::string& b, const std::string& c) {
    return InvalidArgument(what + " differs: baseline " + base.path + " has " + b + ", current " +
                           cur.path + " has " + c + "; compare runs of the same configuration");
  };
  if (bm.backend != cm.backend) throw mismatch("backend", bm.backend, cm.backend);
  if (bm.world_size != cm.world_size)
    throw mismatch("world size", std::to_string(bm.world_size), std::to_string(cm.world_size));

  CompareReport rep;
  rep.baseline_path = base.path;
  rep.current_path = cur.path;
  rep.backend = bm.backend;
  rep.world_size = bm.world_size;
  rep.options = opts;
  std::vector<RowSpread> bspread, cspread;
  const CombinedRows b = combined(base, &bspread);
  const CombinedRows c = combined(cur, &cspread);
  std::map<RowKey, size_t> cur_index;
  for (size_t i = 0; i < c.rows.size(); ++i) cur_index[key_of(c.rows[i])] = i;
  std::vector<bool> used(c.rows.size(), false);
  int matched = 0;
  for (size_t i = 0; i < b.rows.size(); ++i) {
    RowComparison rc;
    rc.key = key_of(b.rows[i]);
    auto it = cur_index.find(rc.key);
    if (it != cur_index.end()) used[it->second] = true;
    if (rc.key.size_bytes < opts.min_size) {
      ++rep.skipped;
      continue;
    }
    if (it == cur_index.end()) {
      rc.verdict = Verdict::Missing;
      rc.base = metric_of(b.rows[i], opts.metric);
      ++rep.missing;
    } else {
      ++matched;
      classify(rc, b.rows[i], c.rows[it->second], bspread[i], opts);
      if (rc.verdict == Verdict::Regression) ++rep.regressions;
      if (rc.verdict == Verdict::Improvement) ++rep.improvements;
      if (rc.verdict == Verdict::Unchanged) ++rep.unchanged;
    }
    rep.rows.push_back(rc);
  }
  for (size_t i = 0; i < c.rows.size(); ++i) {
    if (used[i]) continue;
    if (c.rows[i].size_bytes < opts.min_size) {
      ++rep.skipped;
      continue;
    }
    RowComparison rc;
    rc.key = key_of(c.rows[i]);
    rc.verdict = Verdict::New;
    rc.current = metric_of(c.rows[i], opts.metric);
    ++rep.added;
    rep.rows.push_back(rc);
  }
  if (matched == 0)
    throw InvalidArgument("no row of " + cur.path + " matches a row of baseline " + base.path +
                          (opts.min_size > 0 ? " at or above --min-size" : "") +
                          " (same collective, dtype, op, placement, size); run the same sweep");
  return rep;
}

}  // namespace collie::reports
