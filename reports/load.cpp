#include "reports/load.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "core/error.h"
#include "core/printable.h"
#include "reports/json_io.h"
#include "reports/nccl_tests_json.h"

namespace collie::reports {

using nlohmann::json;

namespace {

constexpr const char* kSchemaPrefix = "collie.perf.v";

std::string stem(const std::string& path) {
  std::string s = path.substr(path.find_last_of('/') + 1);
  if (s.size() > 5 && s.ends_with(".json")) s.resize(s.size() - 5);
  return s;
}

json parse_file(const std::string& path) {
  const std::string text = read_report_file(path);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InvalidArgument(path + ": results file is empty (the run did not write it; re-run " +
                          "collie perf -J)");
  try {
    return parse_json_input(text, kMaxResultsDepth);
  } catch (const InvalidArgument& e) {  // a key given twice, or absurd nesting
    throw InvalidArgument(path + ": " + e.what() + " (not a file collie perf -J wrote)");
  } catch (const json::parse_error& e) {
    const bool at_end = std::string(e.what()).find("end of input") != std::string::npos;
    throw InvalidArgument(
        path + ": not valid JSON at byte " + std::to_string(e.byte) +
        (at_end ? " (file is truncated; was the run interrupted?)" : " (file is corrupt)") +
        "; re-run collie perf -J to regenerate it");
  } catch (const json::exception& e) {  // out_of_range: a number like 1e999
    throw InvalidArgument(path + ": not usable JSON (" + e.what() +
                          "); re-run collie perf -J to regenerate it");
  } catch (const std::bad_alloc&) {
    throw InvalidArgument(path + ": not enough memory to read it");
  }
}

// Checks the schema name and version before the field-by-field reader sees the file, so an
// unknown version fails with a version message rather than a missing-field one.
void check_schema(const std::string& path, const json& j) {
  if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string())
    throw InvalidArgument(path + ": not a collie results file (no \"schema\" field; expected " +
                          kSchemaName + " written by collie perf -J, or an nccl-tests -J file)");
  const std::string schema = j["schema"].get<std::string>();
  if (schema == kSchemaName) return;
  if (schema.starts_with(kSchemaPrefix)) {
    // A version is compared as text (leading zeros dropped), so one past int's range is just
    // newer rather than an exception from a conversion.
    const std::string v = schema.substr(std::string(kSchemaPrefix).size());
    const bool digits = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
    const std::string_view n =
        digits ? std::string_view(v).substr(std::min(v.find_first_not_of('0'), v.size()))
               : std::string_view();
    const bool newer = n.size() > 1 || (n.size() == 1 && n[0] > '1');
    throw InvalidArgument(path + ": schema " + schema + " is " +
                          (newer ? "newer than this collie reads" : "not supported") +
                          " (this collie reads " + kSchemaName + "); " +
                          (newer ? "upgrade collie to read it" : "re-run collie perf -J"));
  }
  throw InvalidArgument(path + ": schema " + quote(schema) + " is not a collie perf results file " +
                        "(expected " + kSchemaName + ")");
}

RowSpread spread_from_json(const json& b) {
  RowSpread s;
  s.runs = b.value("runs", 1);
  s.time_min_us = b.value("time_min_us", 0.0);
  s.time_max_us = b.value("time_max_us", 0.0);
  s.busbw_min_gbps = b.value("busbw_min_gbps", 0.0);
  s.busbw_max_gbps = b.value("busbw_max_gbps", 0.0);
  s.p50_min_us = b.value("p50_min_us", 0.0);
  s.p50_max_us = b.value("p50_max_us", 0.0);
  for (auto [key, out] : {std::pair{"run_p10_us", &s.run_p10_us}, {"run_p50_us", &s.run_p50_us}}) {
    if (!b.contains(key)) continue;
    const json& t = b[key];
    if (!t.is_array() || t.size() > 100000)
      throw InvalidArgument(
          fmt::format("baseline.{} is not an array of at most 100000 times", key));
    for (const json& v : t) {
      const double us = v.get<double>();
      if (!std::isfinite(us) || us <= 0)
        throw InvalidArgument(
            fmt::format("baseline.{} holds {}, not a time above 0", key, quote(v.dump())));
      out->push_back(us);
    }
  }
  return s;
}

}  // namespace

LoadedRun load_run(const std::string& path) {
  const json j = parse_file(path);
  LoadedRun run;
  run.path = path;
  run.label = stem(path);
  if (is_nccl_tests_json(j)) {  // written by nccl-tests itself (collie's own files carry "schema")
    try {
      run.result = run_from_nccl_tests_json(j);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(path + ": " + e.what());
    }
    return run;
  }
  check_schema(path, j);
  try {
    run.result = run_from_json(j);
    if (j.contains("baseline")) {
      run.baseline_runs = j["baseline"].value("runs", 0);
      // Names for messages only: anything but an array of strings is left out.
      const json& src = j["baseline"].value("sources", json::array());
      if (src.is_array() &&
          std::all_of(src.begin(), src.end(), [](const json& x) { return x.is_string(); }))
        for (const auto& x : src) run.baseline_sources.push_back(x.get<std::string>());
      for (const auto& row : j.at("rows"))
        run.spread.push_back(row.contains("baseline") ? spread_from_json(row["baseline"])
                                                      : RowSpread{});
    }
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(path + ": " + e.what() + " (file is corrupt or hand-edited)");
  } catch (const json::exception& e) {
    throw InvalidArgument(path + ": malformed results file (" + e.what() + ")");
  }
  return run;
}

std::vector<LoadedRun> load_runs(const std::vector<std::string>& paths) {
  std::vector<LoadedRun> runs;
  std::set<std::string> seen;
  for (const auto& p : paths) {
    runs.push_back(load_run(p));
    auto& r = runs.back();
    // Two files with the same name (runs/a.json, other/a.json) must not share a legend entry.
    if (seen.count(r.label)) r.label = fmt::format("{}-{}", r.label, r.result.meta.backend);
    if (seen.count(r.label)) r.label = fmt::format("{}-{}", r.label, runs.size());
    seen.insert(r.label);
  }
  return runs;
}

}  // namespace collie::reports
