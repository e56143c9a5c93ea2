#include "reports/json_io.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace collie::reports {

using nlohmann::json;

static json stats_json(const IterStats& s) {
  return json{{"samples", s.samples}, {"min_us", s.min_us}, {"p50_us", s.p50_us},
              {"p95_us", s.p95_us},   {"p99_us", s.p99_us}, {"max_us", s.max_us},
              {"mean_us", s.mean_us}, {"cv", s.cv}};
}

json to_json(const ResultRow& r) {
  json j{{"collective", r.collective},
         {"placement", r.placement},
         {"size_bytes", r.size_bytes},
         {"count", r.count},
         {"dtype", r.dtype},
         {"redop", r.redop},
         {"root", r.root},
         {"time_us", r.time_us},
         {"algbw_gbps", r.algbw_gbps},
         {"busbw_gbps", r.busbw_gbps},
         {"checked", r.wrong >= 0},
         {"wrong", r.wrong >= 0 ? json(r.wrong) : json(nullptr)},
         {"rank_time_us", r.rank_time_us},
         {"slowest_rank", r.slowest_rank},
         {"iter_stats", stats_json(r.iter)},
         {"iters", r.iters},
         {"agg_iters", r.agg_iters},
         {"cycle", r.cycle}};
  if (!r.samples_us.empty()) j["samples_us"] = r.samples_us;
  if (r.wrong > 0) j["first_wrong"] = json{{"rank", r.wrong_rank}, {"offset", r.wrong_offset}};
  return j;
}

json to_json(const RunResult& r) {
  json meta{{"version", r.meta.version},
            {"backend", r.meta.backend},
            {"world_size", r.meta.world_size},
            {"hosts", r.meta.hosts},
            {"library_versions", r.meta.library_versions},
            {"flags", r.meta.flags},
            {"started_at", r.meta.started_at},
            {"finished_at", r.meta.finished_at.empty() ? json(nullptr) : json(r.meta.finished_at)}};
  if (!r.meta.test_hooks.empty()) meta["test_hooks"] = r.meta.test_hooks;
  if (!r.meta.interrupted_by.empty()) meta["interrupted_by"] = r.meta.interrupted_by;
  json rows = json::array();
  for (const auto& row : r.rows) rows.push_back(to_json(row));
  json j{{"schema", r.meta.schema},
         {"run", meta},
         {"rows", rows},
         {"complete", r.summary.has_value()}};
  if (r.summary) {
    const Summary& s = *r.summary;
    j["summary"] = json{{"avg_busbw_gbps", s.avg_busbw_gbps},
                        {"peak_busbw_gbps", s.peak_busbw_gbps},
                        {"peak_size_bytes", s.peak_size_bytes},
                        {"largest_size_busbw_gbps", s.largest_size_busbw_gbps},
                        {"largest_size_bytes", s.largest_size_bytes},
                        {"wrong_total", s.wrong_total},
                        {"stragglers", s.stragglers}};
  }
  return j;
}

template <typename T>
static T field(const json& j, const char* key) {
  if (!j.contains(key))
    throw InvalidArgument(std::string("results JSON: missing field '") + key + "'");
  try {
    return j.at(key).get<T>();
  } catch (const json::exception& e) {
    throw InvalidArgument(std::string("results JSON: field '") + key +
                          "' has the wrong type: " + e.what());
  }
}

ResultRow row_from_json(const json& j) {
  ResultRow r;
  r.collective = field<std::string>(j, "collective");
  r.placement = field<std::string>(j, "placement");
  r.size_bytes = field<int64_t>(j, "size_bytes");
  r.count = field<int64_t>(j, "count");
  r.dtype = field<std::string>(j, "dtype");
  r.redop = field<std::string>(j, "redop");
  r.root = field<int>(j, "root");
  r.time_us = field<double>(j, "time_us");
  r.algbw_gbps = field<double>(j, "algbw_gbps");
  r.busbw_gbps = field<double>(j, "busbw_gbps");
  r.wrong = field<bool>(j, "checked") ? field<int64_t>(j, "wrong") : -1;
  if (j.contains("first_wrong")) {
    r.wrong_rank = field<int>(j["first_wrong"], "rank");
    r.wrong_offset = field<int64_t>(j["first_wrong"], "offset");
  }
  r.rank_time_us = field<std::vector<double>>(j, "rank_time_us");
  r.slowest_rank = field<int>(j, "slowest_rank");
  const json& s = j.at("iter_stats");
  r.iter.samples = field<int>(s, "samples");
  r.iter.min_us = field<double>(s, "min_us");
  r.iter.p50_us = field<double>(s, "p50_us");
  r.iter.p95_us = field<double>(s, "p95_us");
  r.iter.p99_us = field<double>(s, "p99_us");
  r.iter.max_us = field<double>(s, "max_us");
  r.iter.mean_us = field<double>(s, "mean_us");
  r.iter.cv = field<double>(s, "cv");
  if (j.contains("samples_us")) r.samples_us = field<std::vector<double>>(j, "samples_us");
  r.iters = field<int>(j, "iters");
  r.agg_iters = field<int>(j, "agg_iters");
  r.cycle = field<int>(j, "cycle");
  return r;
}

RunResult run_from_json(const json& j) {
  RunResult r;
  r.meta.schema = field<std::string>(j, "schema");
  if (r.meta.schema != kSchemaName)
    throw InvalidArgument("results JSON: schema '" + r.meta.schema + "' is not " + kSchemaName);
  const json& m = j.at("run");
  r.meta.version = field<std::string>(m, "version");
  r.meta.backend = field<std::string>(m, "backend");
  r.meta.world_size = field<int>(m, "world_size");
  r.meta.hosts = field<std::vector<std::string>>(m, "hosts");
  r.meta.library_versions = field<std::map<std::string, std::string>>(m, "library_versions");
  r.meta.flags = field<std::map<std::string, std::string>>(m, "flags");
  r.meta.started_at = field<std::string>(m, "started_at");
  if (m.contains("finished_at") && !m["finished_at"].is_null())
    r.meta.finished_at = field<std::string>(m, "finished_at");
  if (m.contains("test_hooks")) r.meta.test_hooks = field<std::vector<std::string>>(m, "test_hooks");
  if (m.contains("interrupted_by"))
    r.meta.interrupted_by = field<std::string>(m, "interrupted_by");
  for (const auto& row : j.at("rows")) r.rows.push_back(row_from_json(row));
  if (j.contains("summary")) {
    const json& s = j["summary"];
    Summary sum;
    sum.avg_busbw_gbps = field<double>(s, "avg_busbw_gbps");
    sum.peak_busbw_gbps = field<double>(s, "peak_busbw_gbps");
    sum.peak_size_bytes = field<int64_t>(s, "peak_size_bytes");
    sum.largest_size_busbw_gbps = field<double>(s, "largest_size_busbw_gbps");
    sum.largest_size_bytes = field<int64_t>(s, "largest_size_bytes");
    sum.wrong_total = field<int64_t>(s, "wrong_total");
    sum.stragglers = field<std::vector<int>>(s, "stragglers");
    r.summary = sum;
  }
  return r;
}

RunResult read_results(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InvalidArgument("cannot read results file " + path);
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw InvalidArgument("results file " + path + " is not valid JSON: " + e.what());
  }
  try {
    return run_from_json(j);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(path + ": " + e.what());
  }
}

void write_results_atomic(const std::string& path, const RunResult& result) {
  write_file_atomic(path, to_json(result).dump(2) + "\n");
}

void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw Error("cannot write " + tmp + " (check the directory exists and is writable)");
    out << text;
    out.flush();
    if (!out) throw Error("writing " + tmp + " failed (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error("cannot rename " + tmp + " to " + path);
  }
}

}  // namespace collie::reports
