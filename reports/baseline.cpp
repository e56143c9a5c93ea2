#include "reports/baseline.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/error.h"
#include "core/printable.h"
#include "reports/json_io.h"

namespace collie::reports {

RowKey key_of(const ResultRow& r) {
  return RowKey{r.collective, r.dtype, r.redop, r.placement, r.root, r.size_bytes};
}

std::string describe(const RowKey& k) {
  std::string s = k.collective + " " + k.dtype + " " + k.redop + " " + k.placement + " " +
                  std::to_string(k.size_bytes) + " B";
  if (k.root >= 0) s += " root " + std::to_string(k.root);
  return s;
}

const char* run_statistic_name(RunStatistic s) { return s == RunStatistic::P10 ? "p10" : "p50"; }

double run_value_of(const ResultRow& r, RunStatistic s) {
  if (r.samples_us.empty()) return r.time_us;
  return s == RunStatistic::P10 ? percentile(r.samples_us, 0.10) : median(r.samples_us);
}

CombinedRows combine_rows(const std::vector<const ResultRow*>& rows) {
  std::vector<RowKey> order;
  std::map<RowKey, std::vector<const ResultRow*>> groups;
  for (const ResultRow* r : rows) {
    auto& g = groups[key_of(*r)];
    if (g.empty()) order.push_back(key_of(*r));
    g.push_back(r);
  }
  CombinedRows out;
  for (const RowKey& k : order) {
    const auto& g = groups[k];
    ResultRow row = *g.front();
    std::vector<double> time, algbw, busbw;
    std::vector<double> samples, p50;
    int64_t wrong = -1;
    for (const ResultRow* r : g) {
      time.push_back(r->time_us);
      algbw.push_back(r->algbw_gbps);
      busbw.push_back(r->busbw_gbps);
      samples.insert(samples.end(), r->samples_us.begin(), r->samples_us.end());
      if (!r->samples_us.empty()) p50.push_back(median(r->samples_us));
      if (r->wrong >= 0) wrong = std::max<int64_t>(wrong, 0) + r->wrong;
    }
    RowSpread s;
    for (const ResultRow* r : g) {
      s.run_p10_us.push_back(run_value_of(*r, RunStatistic::P10));
      s.run_p50_us.push_back(run_value_of(*r, RunStatistic::P50));
    }
    row.time_us = median(time);
    row.algbw_gbps = median(algbw);
    row.busbw_gbps = median(busbw);
    row.wrong = wrong;
    row.cycle = 0;
    // Pooled samples keep the between-run variation visible to the rank test.
    row.samples_us = std::move(samples);
    if (!row.samples_us.empty()) row.iter = compute_iter_stats(row.samples_us);
    s.runs = static_cast<int>(g.size());
    s.time_min_us = *std::min_element(time.begin(), time.end());
    s.time_max_us = *std::max_element(time.begin(), time.end());
    s.busbw_min_gbps = *std::min_element(busbw.begin(), busbw.end());
    s.busbw_max_gbps = *std::max_element(busbw.begin(), busbw.end());
    if (p50.size() == g.size()) {
      s.p50_min_us = *std::min_element(p50.begin(), p50.end());
      s.p50_max_us = *std::max_element(p50.begin(), p50.end());
    }
    out.rows.push_back(std::move(row));
    out.spread.push_back(s);
  }
  return out;
}

std::vector<ResultRow> rows_of_run(const LoadedRun& run) {
  std::vector<const ResultRow*> rows;
  for (const auto& r : run.result.rows) rows.push_back(&r);
  return combine_rows(rows).rows;
}

const std::vector<MeaningFlag> kRowMeaningFlags = {
    {"traffic", nullptr}, {"--average", "1"},   {"--agg_iters", "1"},
    {"--blocking", "0"},  {"--cudagraph", "0"}, {"--skip_iters", "0"},
};

void check_same_configuration(const LoadedRun& a, const LoadedRun& b, const std::string& advice) {
  const RunMeta &am = a.result.meta, &bm = b.result.meta;
  auto differs = [&](const std::string& what, const std::string& x, const std::string& y) {
    return InvalidArgument(
        fmt::format("{} differs: {} has {}, {} has {}; {}", what, a.path, x, b.path, y, advice));
  };
  if (am.backend != bm.backend) throw differs("backend", quote(am.backend), quote(bm.backend));
  if (am.world_size != bm.world_size)
    throw differs("world size", std::to_string(am.world_size), std::to_string(bm.world_size));
  for (const MeaningFlag& f : kRowMeaningFlags) {
    const auto x = am.flags.find(f.name), y = bm.flags.find(f.name);
    if (f.given_by_default == nullptr && (x == am.flags.end() || y == bm.flags.end())) continue;
    const std::string xv = x != am.flags.end() ? x->second : f.given_by_default;
    const std::string yv = y != bm.flags.end() ? y->second : f.given_by_default;
    if (xv != yv) throw differs(f.name, quote(xv), quote(yv));
  }
}

std::string incomplete_reason(const LoadedRun& run) {
  const std::string name = run.path.substr(run.path.find_last_of('/') + 1);
  if (!run.result.meta.interrupted_by.empty())
    return name + " was interrupted by " + run.result.meta.interrupted_by;
  if (!run.result.summary) return name + " did not complete (complete: false)";
  return "";
}

void check_gate_times(const LoadedRun& run) {
  for (const ResultRow& r : run.result.rows) {
    const double p10 = run_value_of(r, RunStatistic::P10), p50 = run_value_of(r, RunStatistic::P50);
    if (r.time_us > 0 && p10 > 0 && p50 > 0) continue;
    throw InvalidArgument(fmt::format(
        "{}: row {} has no usable time (time_us {}, p10 {} us of {} samples): a gate on it "
        "would call any slowdown unchanged; re-run collie perf -J",
        run.path, describe(key_of(r)), r.time_us, p10, r.samples_us.size()));
  }
}

LoadedRun make_baseline(const std::vector<LoadedRun>& runs) {
  const RunMeta& first = runs.front().result.meta;
  std::vector<std::vector<ResultRow>> per_run;
  std::vector<const ResultRow*> rows;
  for (const auto& run : runs) {
    check_same_configuration(runs.front(), run, "make one baseline per configuration");
    // An interrupted run never reached some rows: the gate would then call them "new" in every
    // later run, however slow.
    if (std::string why = incomplete_reason(run); !why.empty())
      throw InvalidArgument(why + ": a baseline is made of complete runs; re-run it");
    check_gate_times(run);
    per_run.push_back(rows_of_run(run));
  }
  for (const auto& run_rows : per_run)
    for (const auto& r : run_rows) rows.push_back(&r);
  LoadedRun b;
  b.path = "baseline";
  b.label = "baseline";
  b.result.meta = first;
  for (const auto& run : runs) {
    const RunMeta& m = run.result.meta;
    b.result.meta.started_at = std::min(b.result.meta.started_at, m.started_at);
    b.result.meta.finished_at = std::max(b.result.meta.finished_at, m.finished_at);
  }
  CombinedRows c = combine_rows(rows);
  b.result.rows = std::move(c.rows);
  b.spread = std::move(c.spread);
  b.baseline_runs = static_cast<int>(runs.size());
  for (const auto& run : runs) b.baseline_sources.push_back(run.path);
  b.result.summary = summarize(b.result.rows, first.world_size);
  return b;
}

nlohmann::json baseline_to_json(const LoadedRun& b, const std::vector<std::string>& sources) {
  nlohmann::json j = to_json(b.result);
  j["baseline"] = {{"runs", b.baseline_runs}, {"sources", sources}};
  for (size_t i = 0; i < b.spread.size() && i < j["rows"].size(); ++i) {
    const RowSpread& s = b.spread[i];
    j["rows"][i]["baseline"] = {{"runs", s.runs},
                                {"time_min_us", s.time_min_us},
                                {"time_max_us", s.time_max_us},
                                {"busbw_min_gbps", s.busbw_min_gbps},
                                {"busbw_max_gbps", s.busbw_max_gbps},
                                {"p50_min_us", s.p50_min_us},
                                {"p50_max_us", s.p50_max_us},
                                {"run_p10_us", s.run_p10_us},
                                {"run_p50_us", s.run_p50_us}};
  }
  return j;
}

}  // namespace collie::reports
