#include "reports/json_io.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/printable.h"
#include "core/regular_file.h"
#include "reports/nccl_tests_json.h"

namespace collie::reports {

using nlohmann::json;

static json stats_json(const IterStats& s) {
  return json{{"samples", s.samples}, {"min_us", s.min_us}, {"p50_us", s.p50_us},
              {"p95_us", s.p95_us},   {"p99_us", s.p99_us}, {"max_us", s.max_us},
              {"mean_us", s.mean_us}, {"cv", s.cv}};
}

json arrival_json(const ArrivalStats& a) {
  auto rank = [](const RankArrival& x) {
    return json{{"rank", x.rank},
                {"late_p50_us", x.late_p50_us},
                {"late_p95_us", x.late_p95_us},
                {"last_fraction", x.last_fraction},
                {"wait_p50_us", x.wait_p50_us}};
  };
  json ranks = json::array(), late = json::array();
  for (const auto& x : a.ranks) ranks.push_back(rank(x));
  for (const auto& x : late_ranks(a)) late.push_back(x.rank);
  return json{{"iters", a.iters},
              {"skew_p50_us", a.skew_p50_us},
              {"skew_p95_us", a.skew_p95_us},
              {"ranks", ranks},
              {"late_ranks", late}};
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
  if (r.arrival.iters > 0) {
    j["rank_wait_us"] = r.rank_wait_us;
    j["arrival"] = arrival_json(r.arrival);
  }
  if (!r.rank_cpu_wait.empty()) j["rank_cpu_wait"] = r.rank_cpu_wait;
  if (r.wrong > 0) j["first_wrong"] = json{{"rank", r.wrong_rank}, {"offset", r.wrong_offset}};
  return j;
}

json capacity_json(const LinkCapacity& c, const std::vector<ResultRow>& rows) {
  json shares = json::array();
  for (const auto& s : capacity_shares(rows, c))
    shares.push_back(json{{"collective", s.collective},
                          {"peak_busbw_gbps", s.peak_busbw_gbps},
                          {"size_bytes", s.size_bytes},
                          {"percent", s.percent}});
  return json{{"kind", c.kind},
              {"what", c.what},
              {"host", c.host},
              {"gbps", c.gbps},
              {"collectives", shares}};
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
  if (r.capacity) j["capacity"] = capacity_json(*r.capacity, r.rows);
  if (r.summary) {
    const Summary& s = *r.summary;
    j["summary"] = json{{"avg_busbw_gbps", s.avg_busbw_gbps},
                        {"peak_busbw_gbps", s.peak_busbw_gbps},
                        {"peak_size_bytes", s.peak_size_bytes},
                        {"largest_size_busbw_gbps", s.largest_size_busbw_gbps},
                        {"largest_size_bytes", s.largest_size_bytes},
                        {"wrong_total", s.wrong_total},
                        {"stragglers", s.stragglers},
                        {"arrival_stragglers", s.arrival_stragglers},
                        {"cpu_stragglers", s.cpu_stragglers}};
  }
  return j;
}

// An integer of type I from `v`, or nullopt when v is not an integer in I's range (nlohmann's
// get<int>() would truncate 2^40 and convert 1e300 with undefined behaviour).
template <typename I>
static std::optional<I> checked_int(const json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<I>::max())) return std::nullopt;
    return static_cast<I>(u);
  }
  if (!v.is_number_integer()) return std::nullopt;
  const int64_t i = v.get<int64_t>();
  if (i < static_cast<int64_t>(std::numeric_limits<I>::min()) ||
      i > static_cast<int64_t>(std::numeric_limits<I>::max()))
    return std::nullopt;
  return static_cast<I>(i);
}

template <typename T>
static T field(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key))
    throw InvalidArgument(std::string("results JSON: missing field '") + key + "'");
  const json& v = j.at(key);
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (auto i = checked_int<T>(v)) return *i;
    throw InvalidArgument(std::string("results JSON: field '") + key + "' is " + quote(v.dump()) +
                          ", not an integer in range");
  } else if constexpr (std::is_same_v<T, std::vector<int>>) {
    std::vector<int> out;
    if (!v.is_array())
      throw InvalidArgument(std::string("results JSON: field '") + key + "' is not a list");
    for (const json& x : v) {
      auto i = checked_int<int>(x);
      if (!i)
        throw InvalidArgument(std::string("results JSON: field '") + key + "' holds " +
                              quote(x.dump()) + ", not an integer in range");
      out.push_back(*i);
    }
    return out;
  } else {
    try {
      return v.get<T>();
    } catch (const json::exception& e) {
      throw InvalidArgument(std::string("results JSON: field '") + key +
                            "' has the wrong type: " + e.what());
    }
  }
}

// A count or size: field<I> that must be >= lo.
template <typename I>
static I at_least(const json& j, const char* key, I lo) {
  const I v = field<I>(j, key);
  if (v < lo)
    throw InvalidArgument(std::string("results JSON: field '") + key + "' is " + std::to_string(v) +
                          ", below " + std::to_string(lo));
  return v;
}

// A time: a number of microseconds, not below 0 (a negative one is no measurement, and the gate's
// ratios would turn it into a speed-up).
static double time_field(const json& j, const char* key) {
  const double v = field<double>(j, key);
  if (!(v >= 0))
    throw InvalidArgument(std::string("results JSON: field '") + key + "' is " +
                          quote(j.at(key).dump()) + ", not a time");
  return v;
}

static std::vector<double> times_field(const json& j, const char* key) {
  std::vector<double> v = field<std::vector<double>>(j, key);
  for (const double t : v)
    if (!(t >= 0))
      throw InvalidArgument(std::string("results JSON: field '") + key + "' holds " +
                            quote(fmt::format("{}", t)) + ", not a time");
  return v;
}

ResultRow row_from_json(const json& j) {
  ResultRow r;
  r.collective = field<std::string>(j, "collective");
  r.placement = field<std::string>(j, "placement");
  r.size_bytes = at_least<int64_t>(j, "size_bytes", 0);
  r.count = at_least<int64_t>(j, "count", 0);
  r.dtype = field<std::string>(j, "dtype");
  r.redop = field<std::string>(j, "redop");
  r.root = at_least<int>(j, "root", -1);
  r.time_us = time_field(j, "time_us");
  r.algbw_gbps = field<double>(j, "algbw_gbps");
  r.busbw_gbps = field<double>(j, "busbw_gbps");
  r.wrong = field<bool>(j, "checked") ? at_least<int64_t>(j, "wrong", 0) : -1;
  if (j.contains("first_wrong")) {
    r.wrong_rank = field<int>(j["first_wrong"], "rank");
    r.wrong_offset = field<int64_t>(j["first_wrong"], "offset");
  }
  r.rank_time_us = times_field(j, "rank_time_us");
  r.slowest_rank = at_least<int>(j, "slowest_rank", -1);
  if (!j.contains("iter_stats") || !j["iter_stats"].is_object())
    throw InvalidArgument("results JSON: missing field 'iter_stats'");
  const json& s = j.at("iter_stats");
  r.iter.samples = at_least<int>(s, "samples", 0);
  r.iter.min_us = field<double>(s, "min_us");
  r.iter.p50_us = field<double>(s, "p50_us");
  r.iter.p95_us = field<double>(s, "p95_us");
  r.iter.p99_us = field<double>(s, "p99_us");
  r.iter.max_us = field<double>(s, "max_us");
  r.iter.mean_us = field<double>(s, "mean_us");
  r.iter.cv = field<double>(s, "cv");
  if (j.contains("samples_us")) r.samples_us = times_field(j, "samples_us");
  if (j.contains("rank_wait_us")) {
    // The statistics are recomputed from the waits, never taken from the file.
    r.rank_wait_us = field<std::vector<std::vector<double>>>(j, "rank_wait_us");
    for (const auto& w : r.rank_wait_us)
      for (double v : w)
        if (!std::isfinite(v) || v < 0)
          throw InvalidArgument(
              "results JSON: field 'rank_wait_us' holds a value that is not a "
              "time");
    r.arrival = analyze_arrivals(r.rank_wait_us);
  }
  if (j.contains("rank_cpu_wait")) {
    r.rank_cpu_wait = field<std::vector<double>>(j, "rank_cpu_wait");
    for (double v : r.rank_cpu_wait)
      if (!std::isfinite(v) || v < 0)
        throw InvalidArgument(
            "results JSON: field 'rank_cpu_wait' holds a value that is not a "
            "share of time");
  }
  r.iters = at_least<int>(j, "iters", 0);
  r.agg_iters = at_least<int>(j, "agg_iters", 0);
  r.cycle = at_least<int>(j, "cycle", 0);
  return r;
}

static RunResult run_from_json_fields(const json& j) {
  RunResult r;
  r.meta.schema = field<std::string>(j, "schema");
  if (r.meta.schema != kSchemaName)
    throw InvalidArgument("results JSON: schema " + quote(r.meta.schema) + " is not " +
                          kSchemaName);
  const json& m = j.at("run");
  r.meta.version = field<std::string>(m, "version");
  r.meta.backend = field<std::string>(m, "backend");
  r.meta.world_size = at_least<int>(m, "world_size", 0);
  r.meta.hosts = field<std::vector<std::string>>(m, "hosts");
  r.meta.library_versions = field<std::map<std::string, std::string>>(m, "library_versions");
  r.meta.flags = field<std::map<std::string, std::string>>(m, "flags");
  r.meta.started_at = field<std::string>(m, "started_at");
  if (m.contains("finished_at") && !m["finished_at"].is_null())
    r.meta.finished_at = field<std::string>(m, "finished_at");
  if (m.contains("test_hooks"))
    r.meta.test_hooks = field<std::vector<std::string>>(m, "test_hooks");
  if (m.contains("interrupted_by")) r.meta.interrupted_by = field<std::string>(m, "interrupted_by");
  const json& rows = j.at("rows");
  if (rows.is_array()) r.rows.reserve(rows.size());
  for (const auto& row : rows) r.rows.push_back(row_from_json(row));
  if (j.contains("capacity")) {
    const json& c = j["capacity"];
    LinkCapacity cap;
    cap.kind = field<std::string>(c, "kind");
    cap.what = field<std::string>(c, "what");
    cap.host = field<std::string>(c, "host");
    cap.gbps = field<double>(c, "gbps");
    if (!std::isfinite(cap.gbps) || cap.gbps < 0)
      throw InvalidArgument("results JSON: capacity.gbps is not a bandwidth");
    r.capacity = cap;
  }
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
    if (s.contains("arrival_stragglers"))
      sum.arrival_stragglers = field<std::vector<int>>(s, "arrival_stragglers");
    if (s.contains("cpu_stragglers"))
      sum.cpu_stragglers = field<std::vector<int>>(s, "cpu_stragglers");
    r.summary = sum;
  }
  return r;
}

RunResult run_from_json(const json& j) {
  // What field<> does not check itself (a missing object, a list that is not one) is still one
  // InvalidArgument line, never an "internal error".
  try {
    return run_from_json_fields(j);
  } catch (const json::exception& e) {
    throw InvalidArgument(std::string("results JSON: ") + e.what());
  }
}

std::string read_report_file(const std::string& path) {
  try {
    return RegularFile(path, kMaxResultsFileBytes).read_all();
  } catch (const std::bad_alloc&) {
    throw InvalidArgument(fmt::format("{}: not enough memory to read it", path));
  }
}

RunResult read_results(const std::string& path) {
  json j;
  try {
    j = parse_json_input(read_report_file(path), kMaxResultsDepth);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for 1e999
    throw InvalidArgument("results file " + path + " is not valid JSON: " + e.what());
  } catch (const InvalidArgument& e) {
    throw InvalidArgument("results file " + path + ": " + e.what());
  }
  try {
    return is_nccl_tests_json(j) ? run_from_nccl_tests_json(j) : run_from_json(j);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(path + ": " + e.what());
  }
}

void write_results_atomic(const std::string& path, const RunResult& result) {
  write_file_atomic(path, to_json(result).dump(2) + "\n");
}

}  // namespace collie::reports
