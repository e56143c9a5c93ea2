#include "probes/accept_spec.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <cmath>
#include <set>
#include <sstream>

#include "core/env.h"
#include "core/error.h"
#include "core/json_input.h"
#include "core/printable.h"
#include "core/regular_file.h"
#include "core/size.h"
#include "probes/perf_check.h"
#include "probes/spec_yaml.h"

namespace collie::probes {
namespace {

using json = nlohmann::json;

constexpr int64_t kMaxSpecInt = 1000000000;

enum class T { Bool, Number, Int, Bytes, Duration, String, Object, Strings };

struct KeySpec {
  const char* key;
  T type;
};

// Where a value sits: as the messages name it ("checks[1] ('pairwise').rules") and as a JSON
// pointer ("/checks/1/rules") for the YAML line lookup.
struct Loc {
  std::string text;
  std::string ptr;
  Loc key(const std::string& k) const {
    return {text + "." + k, (json::json_pointer(ptr) / k).to_string()};
  }
};

// What each kind accepts. Rules are documented in docs/acceptance.md.
const std::map<std::string, std::vector<KeySpec>>& param_keys() {
  static const std::map<std::string, std::vector<KeySpec>> m{
      {"connectivity", {{"repeats", T::Int}, {"interval", T::Duration}}},
      {"pairwise",
       {{"bytes", T::Bytes},
        {"iters", T::Int},
        {"latency_iters", T::Int},
        {"slow_threshold", T::Number},
        {"crit_drop", T::Number},
        {"noise_k", T::Number},
        {"schedule", T::String},
        {"rotation", T::Int},
        {"confirm", T::Int},
        {"capacity_fraction", T::Number},
        {"reverse_fraction", T::Number}}},
      {"stragglers",
       {{"iters", T::Int},
        {"warmup", T::Int},
        {"bytes", T::Bytes},
        {"work", T::Int},
        {"late_us", T::Number}}},
      {"env", {}},
      {"perf",
       {{"collective", T::String},
        {"min_bytes", T::Bytes},
        {"max_bytes", T::Bytes},
        {"step_bytes", T::Bytes},
        {"step_factor", T::Int},
        {"iters", T::Int},
        {"warmup", T::Int},
        {"dtype", T::String},
        {"op", T::String}}},
  };
  return m;
}

const std::map<std::string, std::vector<KeySpec>>& rule_keys() {
  static const std::map<std::string, std::vector<KeySpec>> m{
      {"connectivity", {{"all_reachable", T::Bool}, {"max_rtt_us", T::Number}}},
      {"pairwise",
       {{"max_slow_hosts", T::Int},
        {"max_slow_links", T::Int},
        {"min_link_gbps", T::Number},
        {"max_latency_us", T::Number},
        {"max_drop_vs_baseline", T::Object},
        {"max_rise_vs_baseline", T::Object}}},
      {"stragglers",
       {{"max_skew_us", T::Number},
        {"max_stragglers", T::Int},
        {"max_rise_vs_baseline", T::Object}}},
      {"env", {{"consistent", T::Bool}, {"ignore", T::Strings}}},
      {"perf",
       {{"min_busbw_gbps", T::Object},
        {"max_time_us", T::Object},
        {"max_drop_vs_baseline", T::Object},
        {"max_rise_vs_baseline", T::Object}}},
  };
  return m;
}

std::string known(const std::vector<KeySpec>& ks) {
  std::string out;
  for (const auto& k : ks) out += (out.empty() ? "" : ", ") + std::string(k.key);
  return out.empty() ? "none" : out;
}

void check_type(const json& v, T t, const Loc& at) {
  const std::string& where = at.text;
  auto fail = [&](const char* expected) {
    throw SpecError(fmt::format("{} must be {} (got {})", where, expected, spec_value_text(v)),
                    at.ptr);
  };
  switch (t) {
    case T::Bool:
      if (!v.is_boolean()) fail("true or false");
      break;
    case T::Number:
      if (!v.is_number() || !(v.get<double>() >= 0) || !std::isfinite(v.get<double>()))
        fail("a non-negative number");
      break;
    case T::Int:
      // Counts (iters, repeats, work) end up in int arithmetic: 1e9 is more than any probe needs.
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxSpecInt ||
          (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kMaxSpecInt)))
        fail("a non-negative integer (at most 1000000000)");
      break;
    case T::Bytes:
      try {
        parse_bytes(v, where);
      } catch (const SpecError& e) {
        throw SpecError(e.what(), at.ptr);
      }
      break;
    case T::Duration:
      if (!v.is_string() && !v.is_number()) fail("a duration such as \"500ms\" or \"2s\"");
      try {
        parse_duration(v.is_string() ? v.get<std::string>() : std::to_string(v.get<double>()));
      } catch (const InvalidArgument&) {
        fail("a duration such as \"500ms\" or \"2s\"");
      }
      break;
    case T::String:
      if (!v.is_string()) fail("a string");
      break;
    case T::Object:
      if (!v.is_object() || v.empty()) fail("a non-empty object");
      for (const auto& [k, x] : v.items())
        if (!x.is_number() || !(x.get<double>() >= 0) || !std::isfinite(x.get<double>()))
          throw SpecError(fmt::format("{}.{} must be a non-negative number", where, k),
                          at.key(k).ptr);
      break;
    case T::Strings:
      if (!v.is_array()) fail("a list of strings");
      for (const auto& x : v)
        if (!x.is_string()) fail("a list of strings");
      break;
  }
}

void check_keys(const json& obj, const std::vector<KeySpec>& allowed, const Loc& at) {
  if (!obj.is_object()) throw SpecError(fmt::format("{} must be an object", at.text), at.ptr);
  for (const auto& [k, v] : obj.items()) {
    const KeySpec* ks = nullptr;
    for (const auto& a : allowed)
      if (k == a.key) ks = &a;
    if (!ks)
      throw SpecError(
          fmt::format("{}: unknown key {} (known: {})", at.text, quote(k), known(allowed)),
          at.key(k).ptr);
    check_type(v, ks->type, at.key(k));
  }
}

// JSON nested at most 64 deep (a spec needs 4); the file is already at most 1 MiB.
constexpr int kMaxJsonDepth = 64;

// A key given twice is refused, as in YAML: JSON readers disagree on which one counts.
json parse_json_limited(const std::string& text) {
  try {
    return parse_json_input(text, kMaxJsonDepth);
  } catch (const InvalidArgument& e) {
    throw SpecError(e.what());
  }
}

// `profiles:` list: name, hosts glob and the absolute limits (sizes validated like rules).
std::vector<NodeProfile> parse_profiles(const json& j) {
  std::vector<NodeProfile> out;
  if (!j.is_array())
    throw SpecError("spec.profiles must be a list of {name, hosts, limits...}", "/profiles");
  for (size_t i = 0; i < j.size(); ++i) {
    const Loc at{fmt::format("profiles[{}]", i), fmt::format("/profiles/{}", i)};
    check_keys(j[i],
               {{"name", T::String},
                {"hosts", T::String},
                {"min_link_gbps", T::Number},
                {"max_latency_us", T::Number},
                {"min_busbw_gbps", T::Object},
                {"max_time_us", T::Object}},
               at);
    NodeProfile p;
    p.name = j[i].value("name", fmt::format("profile {}", i));
    p.hosts = j[i].value("hosts", "*");
    p.min_link_gbps = j[i].value("min_link_gbps", 0.0);
    p.max_latency_us = j[i].value("max_latency_us", 0.0);
    for (const char* key : {"min_busbw_gbps", "max_time_us"}) {
      if (!j[i].contains(key)) continue;
      auto& dst = std::string(key) == "min_busbw_gbps" ? p.min_busbw_gbps : p.max_time_us;
      for (const auto& [size, v] : j[i][key].items()) {
        try {
          dst[parse_bytes(json(size), at.text + "." + key)] = v.get<double>();
        } catch (const SpecError& e) {
          throw SpecError(e.what(), at.key(key).key(size).ptr);
        }
      }
    }
    if (p.min_link_gbps == 0 && p.max_latency_us == 0 && p.min_busbw_gbps.empty() &&
        p.max_time_us.empty())
      throw SpecError(at.text + ": a profile without limits checks nothing", at.ptr);
    out.push_back(std::move(p));
  }
  return out;
}

// Values a type check cannot express.
void check_pairwise_params(const json& p, const Loc& at) {
  if (p.contains("schedule") && p["schedule"] != "quick" && p["schedule"] != "full")
    throw SpecError(at.text + ".schedule must be \"quick\" or \"full\"", at.key("schedule").ptr);
  for (const char* k : {"slow_threshold", "crit_drop"})
    if (p.contains(k) && !(p[k].get<double>() > 0 && p[k].get<double>() <= 1))  // NaN fails
      throw SpecError(fmt::format("{}.{} must be in (0, 1]", at.text, k), at.key(k).ptr);
  if (p.contains("confirm") && p["confirm"].get<int64_t>() < 1)
    throw SpecError(at.text + ".confirm must be >= 1", at.key("confirm").ptr);
  for (const char* k : {"capacity_fraction", "reverse_fraction"})
    if (p.contains(k) && !(p[k].get<double>() >= 0 && p[k].get<double>() < 1))  // NaN fails
      throw SpecError(fmt::format("{}.{} must be in [0, 1) (0 = off)", at.text, k), at.key(k).ptr);
}

}  // namespace

const NodeProfile* AcceptSpec::profile_for(const std::string& host) const {
  for (const auto& p : profiles)
    if (::fnmatch(p.hosts.c_str(), host.c_str(), 0) == 0) return &p;
  return nullptr;
}

int64_t parse_bytes(const json& v, const std::string& what) {
  if (v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= kMaxByteSize &&
      !(v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kMaxByteSize)))
    return v.get<int64_t>();
  if (!v.is_string())
    throw SpecError(fmt::format("{} must be a size such as 8, \"64K\", \"4M\" (at most 1T; got {})",
                                what, spec_value_text(v)));
  try {
    return parse_byte_size(v.get<std::string>(), what + ":");
  } catch (const InvalidArgument& e) {
    throw SpecError(e.what());
  }
}

AcceptSpec parse_spec(const json& j) {
  if (!j.is_object()) throw SpecError("the spec must be an object with a \"checks\" list");
  json top = j;
  top.erase("checks");
  top.erase("profiles");
  check_keys(top,
             {{"name", T::String},
              {"backend", T::String},
              {"timeout", T::Duration},
              {"baseline", T::String}},
             Loc{"spec", ""});
  AcceptSpec s;
  s.name = j.value("name", s.name);
  s.backend = j.value("backend", s.backend);
  if (j.contains("timeout")) {
    const auto& t = j["timeout"];
    s.timeout =
        parse_duration(t.is_string() ? t.get<std::string>() : std::to_string(t.get<double>()));
    if (s.timeout.count() <= 0) throw SpecError("spec.timeout must be > 0", "/timeout");
  }
  s.baseline = j.value("baseline", "");
  if (j.contains("profiles")) s.profiles = parse_profiles(j["profiles"]);
  if (!j.contains("checks") || !j["checks"].is_array() || j["checks"].empty())
    throw SpecError("spec: \"checks\" must be a non-empty list of checks", "/checks");
  std::set<std::string> names;
  for (size_t i = 0; i < j["checks"].size(); ++i) {
    const json& c = j["checks"][i];
    Loc at{fmt::format("checks[{}]", i), fmt::format("/checks/{}", i)};
    if (!c.is_object()) throw SpecError(at.text + " must be an object", at.ptr);
    CheckSpec cs;
    if (c.contains("probe") == c.contains("perf"))
      throw SpecError(at.text + ": give exactly one of \"probe\": NAME or \"perf\": COLLECTIVE",
                      at.ptr);
    json params = c;
    if (c.contains("probe")) {
      if (!c["probe"].is_string() || !param_keys().count(c["probe"].get<std::string>()) ||
          c["probe"] == "perf")
        throw SpecError(
            fmt::format("{}: unknown probe {} (known: connectivity, pairwise, stragglers, env)",
                        at.text, spec_value_text(c["probe"])),
            at.key("probe").ptr);
      cs.kind = c["probe"].get<std::string>();
      params.erase("probe");
    } else {
      if (!c["perf"].is_string())
        throw SpecError(at.text + ".perf must be a collective name", at.key("perf").ptr);
      cs.kind = "perf";
      params["collective"] = c["perf"];
      params.erase("perf");
    }
    if (c.contains("name") && !c["name"].is_string())
      throw SpecError(at.text + ".name must be a string", at.key("name").ptr);
    cs.name = c.value(
        "name", cs.kind == "perf" ? "perf " + params["collective"].get<std::string>() : cs.kind);
    at.text = fmt::format("{} ('{}')", at.text, cs.name);
    if (!names.insert(cs.name).second)
      throw SpecError(at.text + ": the name is used twice; give each check a distinct \"name\"",
                      at.key("name").ptr);
    params.erase("name");
    cs.rules = c.value("rules", json::object());
    params.erase("rules");
    check_keys(params, param_keys().at(cs.kind), at);
    check_keys(cs.rules, rule_keys().at(cs.kind), at.key("rules"));
    if (cs.rules.empty())
      throw SpecError(fmt::format("{}: no rules; a check without rules cannot fail (known: {})",
                                  at.text, known(rule_keys().at(cs.kind))),
                      at.ptr);
    for (const char* rel : {"max_drop_vs_baseline", "max_rise_vs_baseline"})
      if (cs.rules.contains(rel) && s.baseline.empty())
        throw SpecError(
            fmt::format("{}.rules.{} needs a \"baseline\" file in the spec", at.text, rel),
            at.key("rules").key(rel).ptr);
    cs.params = params;
    if (cs.kind == "pairwise") check_pairwise_params(params, at);
    if (cs.kind == "perf") {
      try {
        perf_check_options(cs, s.timeout, at.text);
      } catch (const SpecError& e) {
        throw SpecError(e.what(), at.ptr + "/" + e.pointer());
      }
    }
    s.checks.push_back(std::move(cs));
  }
  return s;
}

AcceptSpec load_spec(const std::string& path) {
  // A spec is a page of text; a larger file is a mistake, not a spec. Regular files only: a FIFO
  // would block the reader (core/regular_file.h).
  constexpr size_t kMaxSpecBytes = 1 << 20;
  std::string text;
  try {
    text = RegularFile(path, kMaxSpecBytes).read_all();
  } catch (const InvalidArgument& e) {
    throw SpecError(fmt::format("cannot read spec file: {}", e.what()));
  }
  const bool yaml = path.ends_with(".yaml") || path.ends_with(".yml");
  if (!yaml) {
    json j;
    try {
      j = parse_json_limited(text);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for 1e999
      throw SpecError(fmt::format("{} is not valid JSON: {}", path, e.what()));
    } catch (const SpecError& e) {
      throw SpecError(fmt::format("{}: {}", path, e.what()));
    }
    try {
      return parse_spec(j);
    } catch (const SpecError& e) {
      throw SpecError(fmt::format("{}: {}", path, e.what()), e.pointer());
    }
  }
  YamlLines lines;
  const json j = yaml_to_json(text, path, lines);
  try {
    return parse_spec(j);
  } catch (const SpecError& e) {
    const int line = lines.line_of(e.pointer());
    if (line <= 0) throw SpecError(fmt::format("{}: {}", path, e.what()), e.pointer());
    throw SpecError(fmt::format("{}:{}: {}", path, line, e.what()), e.pointer());
  }
}

}  // namespace collie::probes
