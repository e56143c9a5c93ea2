#include "reports/nccl_tests_json.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "reports/json_io.h"

namespace collie::reports {

using nlohmann::json;

namespace {

// nccl-tests writes booleans as the strings "true" / "false".
json bool_str(bool v) { return v ? "true" : "false"; }

// collie's ISO 8601 UTC stamp in nccl-tests' "%Y-%m-%d %H:%M:%S" spelling.
json nccl_time(const std::string& iso) {
  if (iso.empty()) return nullptr;
  std::string s = iso;
  if (s.size() > 10 && s[10] == 'T') s[10] = ' ';
  if (!s.empty() && s.back() == 'Z') s.pop_back();
  return s;
}

// NCCL_VERSION_CODE of a "2.27.3" version string (0 when it is not one).
int nccl_version_code(const RunMeta& m) {
  const auto it = m.library_versions.find("nccl");
  if (it == m.library_versions.end()) return 0;
  int a = 0, b = 0, c = 0;
  if (std::sscanf(it->second.c_str(), "%d.%d.%d", &a, &b, &c) != 3) return 0;
  return a * 10000 + b * 100 + c;
}

json placement_json(const ResultRow* r) {
  if (r == nullptr) return nullptr;
  return json{{"time", r->time_us},
              {"alg_bw", r->algbw_gbps},
              {"bus_bw", r->busbw_gbps},
              {"nwrong", r->wrong >= 0 ? json(static_cast<double>(r->wrong)) : json(nullptr)}};
}

json per_iter_json(const ResultRow& r) {
  const IterStats& s = r.iter;
  json j{{"skipped_iterations", r.iter_skip},
         {"min_us", s.min_us},
         {"max_us", s.max_us},
         {"avg_us", s.mean_us},
         {"p50_us", s.p50_us},
         {"p95_us", s.p95_us},
         {"p99_us", s.p99_us},
         {"stdev_us", s.cv * s.mean_us},
         {"cv_pct", s.cv * 100},
         {"times_us", r.samples_us}};
  // As nccl-tests: the per-process rows only when there is more than one process.
  if (r.rank_samples_us.size() > 1) j["per_process_max_times_us"] = r.rank_samples_us;
  return j;
}

bool same_line(const ResultRow& a, const ResultRow& b) {
  return a.collective == b.collective && a.size_bytes == b.size_bytes && a.count == b.count &&
         a.dtype == b.dtype && a.redop == b.redop && a.root == b.root && a.cycle == b.cycle;
}

json result_json(const RunResult& r, size_t out_i, size_t in_i) {
  constexpr size_t kNone = static_cast<size_t>(-1);
  const ResultRow* out = out_i == kNone ? nullptr : &r.rows[out_i];
  const ResultRow* in = in_i == kNone ? nullptr : &r.rows[in_i];
  const ResultRow& k = out ? *out : *in;
  char root[32];
  std::snprintf(root, sizeof root, "%6i", k.root);  // nccl-tests writes the padded table cell
  json j{{"size", k.size_bytes},
         {"count", k.count},
         {"type", k.dtype},
         {"redop", k.redop},
         {"root", root},
         {"out_of_place", placement_json(out)},
         {"in_place", placement_json(in)}};
  if (out && !out->samples_us.empty()) j["out_of_place_per_iter"] = per_iter_json(*out);
  if (in && !in->samples_us.empty()) j["in_place_per_iter"] = per_iter_json(*in);
  j["actual_iterations"] = k.iters;
  j["experiment_name"] = k.collective + "_perf";
  json idx = json::object();
  if (out) idx["out_of_place"] = out_i;
  if (in) idx["in_place"] = in_i;
  j["collie"] = json{{"collective", k.collective}, {"cycle", k.cycle}, {"rows", idx}};
  return j;
}

const json& need(const json& j, const char* key, const char* where) {
  if (!j.is_object() || !j.contains(key))
    throw InvalidArgument(std::string("nccl-tests JSON: missing field '") + key + "' in " + where);
  return j.at(key);
}

// A number as nccl-tests writes it: a JSON number, or the string "nan".
double number(const json& v, const char* key) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string() && v.get<std::string>() == "nan")
    return std::numeric_limits<double>::quiet_NaN();
  throw InvalidArgument(std::string("nccl-tests JSON: field '") + key + "' is not a number");
}

std::string collective_name(const json& j) {
  auto strip = [](std::string s) {
    if (s.ends_with("_mpi")) s.resize(s.size() - 4);
    if (s.ends_with("_perf")) s.resize(s.size() - 5);
    return s;
  };
  if (j.contains("args") && j["args"].is_array() && !j["args"].empty() &&
      j["args"][0].is_string()) {
    std::string a = j["args"][0].get<std::string>();
    a = a.substr(a.find_last_of('/') + 1);
    if (a.ends_with("_perf") || a.ends_with("_perf_mpi")) return strip(a);
  }
  return "";
}

// nccl-tests names the collective in experiment_name only when replaying a trace; collie writes
// "<collective>_perf" there.
std::string experiment_collective(const json& res) {
  std::string e = res.value("experiment_name", std::string());
  if (e.ends_with("_perf")) e.resize(e.size() - 5);
  return e.empty() ? std::string("unknown") : e;
}

ResultRow row_from(const json& res, const json& p, const char* placement, const std::string& coll,
                   const json* per_iter) {
  ResultRow r;
  r.collective = coll;
  r.placement = placement;
  r.size_bytes = need(res, "size", "a result").get<int64_t>();
  r.count = need(res, "count", "a result").get<int64_t>();
  r.dtype = need(res, "type", "a result").get<std::string>();
  r.redop = need(res, "redop", "a result").get<std::string>();
  const json& root = need(res, "root", "a result");
  r.root = root.is_string() ? std::stoi(root.get<std::string>()) : root.get<int>();
  r.time_us = number(p.contains("time") ? p["time"] : need(p, "cpu_time", "a placement"), "time");
  r.algbw_gbps = number(need(p, "alg_bw", "a placement"), "alg_bw");
  r.busbw_gbps = number(need(p, "bus_bw", "a placement"), "bus_bw");
  const json& w = need(p, "nwrong", "a placement");
  const double wrong = w.is_null() ? -1 : number(w, "nwrong");
  r.wrong = std::isnan(wrong) ? -1 : static_cast<int64_t>(wrong);
  r.iters = res.value("actual_iterations", 0);
  if (per_iter != nullptr) {
    r.samples_us = need(*per_iter, "times_us", "a per-iteration block").get<std::vector<double>>();
    r.iter_skip = per_iter->value("skipped_iterations", 0);
    if (per_iter->contains("per_process_max_times_us"))
      r.rank_samples_us =
          (*per_iter)["per_process_max_times_us"].get<std::vector<std::vector<double>>>();
  }
  r.iter = compute_iter_stats(r.samples_us);
  for (size_t k = 0; k < r.rank_samples_us.size(); ++k) {
    const auto& t = r.rank_samples_us[k];
    double sum = 0;
    for (double v : t) sum += v;
    r.rank_time_us.push_back(t.empty() ? 0 : sum / t.size());
    if (r.slowest_rank < 0 || r.rank_time_us.back() > r.rank_time_us[r.slowest_rank])
      r.slowest_rank = static_cast<int>(k);
  }
  return r;
}

}  // namespace

json to_nccl_tests_json(const RunResult& r, const NcclTestsConfig& c) {
  json devices = json::array();
  for (int k = 0; k < r.meta.world_size; ++k) {
    const RankDevice dev =
        k < static_cast<int>(r.meta.devices.size()) ? r.meta.devices[k] : RankDevice{};
    devices.push_back(
        json{{"rank", k},
             {"group", 0},
             {"pid", k < static_cast<int>(c.pids.size()) ? c.pids[k] : 0},
             {"hostname", k < static_cast<int>(r.meta.hosts.size()) ? r.meta.hosts[k] : "?"},
             {"device", dev.index},
             {"device_hex", dev.bus_id},
             {"device_info", dev.model}});
  }
  json config{{"nthreads", 1},
              {"ngpus", 1},
              {"minimum_bytes", c.min_bytes},
              {"maximum_bytes", c.max_bytes}};
  if (c.step_factor > 1) {
    config["step_factor"] = c.step_factor;
  } else {
    config["step_bytes"] = c.step_bytes;
  }
  config["warmup_iters"] = c.warmup_iters;
  config["iterations"] = c.iters;
  config["aggregated_iterations"] = c.agg_iters;
  config["validation"] = c.check_iters;
  config["graph"] = c.graph_launches;
  config["blocking_collectives"] = bool_str(c.blocking);
  config["per_iter_timing"] = bool_str(c.per_iter);
  config["per_iter_skip"] = c.iter_skip;
  config["parallel_init"] = bool_str(false);
  config["devices"] = devices;

  constexpr size_t kNone = static_cast<size_t>(-1);
  json results = json::array();
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const ResultRow& row = r.rows[i];
    const bool paired = row.placement == "out" && i + 1 < r.rows.size() &&
                        r.rows[i + 1].placement == "in" && same_line(row, r.rows[i + 1]);
    if (paired) {
      results.push_back(result_json(r, i, i + 1));
      ++i;
    } else if (row.placement == "in") {
      results.push_back(result_json(r, kNone, i));
    } else {
      results.push_back(result_json(r, i, kNone));
    }
  }
  const Summary s = r.summary ? *r.summary : summarize(r.rows, r.meta.world_size);
  json avg{{"bandwidth", s.avg_busbw_gbps}};
  avg["okay"] =
      c.min_busbw < 0 ? json("unchecked") : bool_str(s.avg_busbw_gbps >= 0.9 * c.min_busbw);
  return json{{"version", kNcclTestsJsonVersion},
              {"start_time", nccl_time(r.meta.started_at)},
              {"args", c.args},
              {"env", c.env},
              {"nccl_version", nccl_version_code(r.meta)},
              {"config", config},
              {"results", results},
              {"out_of_bounds", {{"count", s.wrong_total}, {"okay", bool_str(s.wrong_total == 0)}}},
              {"average_bus_bandwidth", avg},
              {"errors", json::array()},
              {"end_time", r.summary ? nccl_time(r.meta.finished_at) : json(nullptr)}};
}

json to_results_document(const RunResult& r, const NcclTestsConfig& c) {
  json j = to_nccl_tests_json(r, c);
  const json collie = to_json(r);
  for (const auto& el : collie.items()) j[el.key()] = el.value();
  return j;
}

bool is_nccl_tests_json(const json& j) {
  return j.is_object() && !j.contains("schema") && j.contains("version") &&
         j["version"].is_number_integer() && j.contains("results") && j["results"].is_array();
}

RunResult run_from_nccl_tests_json(const json& j) {
  RunResult run;
  try {
    const std::string coll = collective_name(j);
    RunMeta& m = run.meta;
    m.version = "nccl-tests";
    m.backend = "nccl";
    if (j.contains("start_time") && j["start_time"].is_string())
      m.started_at = j["start_time"].get<std::string>();
    if (j.contains("end_time") && j["end_time"].is_string())
      m.finished_at = j["end_time"].get<std::string>();
    if (j.contains("nccl_version") && j["nccl_version"].is_number_integer()) {
      const int v = j["nccl_version"].get<int>();
      if (v > 0)
        m.library_versions["nccl"] = std::to_string(v / 10000) + "." +
                                     std::to_string(v % 10000 / 100) + "." +
                                     std::to_string(v % 100);
    }
    if (j.contains("config") && j["config"].contains("devices")) {
      for (const auto& d : j["config"]["devices"])
        m.hosts.push_back(d.value("hostname", std::string("?")));
    }
    m.world_size = static_cast<int>(m.hosts.size());
    for (const auto& res : j.at("results")) {
      const std::string c = coll.empty() ? experiment_collective(res) : coll;
      for (const auto& [key, place] :
           {std::pair{"out_of_place", "out"}, std::pair{"in_place", "in"}}) {
        if (!res.contains(key) || res[key].is_null()) continue;
        const std::string iter_key = std::string(key) + "_per_iter";
        const json* per_iter = res.contains(iter_key) ? &res[iter_key] : nullptr;
        run.rows.push_back(row_from(res, res[key], place, c, per_iter));
      }
    }
    if (m.world_size == 0 && !run.rows.empty())
      m.world_size = static_cast<int>(run.rows.front().rank_samples_us.size());
  } catch (const json::exception& e) {
    throw InvalidArgument(std::string("nccl-tests JSON: a field has the wrong type (") + e.what() +
                          ")");
  } catch (const std::logic_error& e) {  // std::stoi of a root that is not a number
    throw InvalidArgument(std::string("nccl-tests JSON: unreadable root (") + e.what() + ")");
  }
  run.summary = summarize(run.rows, run.meta.world_size);
  return run;
}

}  // namespace collie::reports
