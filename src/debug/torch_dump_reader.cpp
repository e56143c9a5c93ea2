// parse_torch_dump: a PyTorch dump becomes a collie dump (FlightRecorder::dump_json's layout),
// which parse_dump then validates like any other: one set of range checks for both formats.
// What torch does not record stays unknown: root (-1), failure (false), dump time (ages unknown),
// ring size (wrapped false).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "core/error.h"
#include "debug/pickle.h"
#include "debug/torch_dump.h"

namespace collie {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& what) {
  throw InvalidArgument(fmt::format("invalid PyTorch flight-recorder dump: {}", what));
}

std::string brief(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// pg_config ranks: torch writes the str "[0, 1]"; its tests sometimes a list.
json ranks_list(const json& v, const std::string& where) {
  if (v.is_array()) return v;
  if (!v.is_string()) bad(fmt::format("{}ranks is {}, not \"[0, 1, ...]\"", where, brief(v)));
  const std::string& s = v.get_ref<const std::string&>();
  json out = json::array();
  size_t i = 0;
  auto skip = [&] {
    while (i < s.size() && s[i] == ' ') ++i;
  };
  skip();
  if (i >= s.size() || s[i] != '[') bad(fmt::format("{}ranks '{}' is not a list", where, brief(v)));
  ++i;
  skip();
  while (i < s.size() && s[i] != ']') {
    size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && i - start < 9) ++i;
    if (i == start) bad(fmt::format("{}ranks '{}' holds a non-rank", where, brief(v)));
    out.push_back(std::stoi(s.substr(start, i - start)));
    skip();
    if (i < s.size() && s[i] == ',') {
      ++i;
      skip();
    } else if (i < s.size() && s[i] != ']') {
      bad(fmt::format("{}ranks '{}' is not a list of ranks", where, brief(v)));
    }
  }
  if (i >= s.size()) bad(fmt::format("{}ranks '{}' has no closing ]", where, brief(v)));
  return out;
}

// A seq id: an int, or (torch's test fixtures) its decimal text.
json seq_id(const json& v) {
  if (!v.is_string()) return v;
  const std::string& s = v.get_ref<const std::string&>();
  if (s.empty() || s.size() > 18 ||
      !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return v;  // parse_dump names the bad value
  }
  return std::stoll(s);
}

// c10's dtype names as collie's, so a job's dumps compare alike whichever format wrote them.
json dtypes(const json& v) {
  static const std::map<std::string, std::string> kNames = {
      {"Char", "int8"},     {"Byte", "uint8"},    {"Int", "int32"},    {"UInt32", "uint32"},
      {"Long", "int64"},    {"UInt64", "uint64"}, {"Half", "float16"}, {"BFloat16", "bfloat16"},
      {"Float", "float32"}, {"Double", "float64"}};
  json list = v.is_array() ? v : v.is_null() ? json::array() : json::array({v});
  for (json& d : list) {
    if (!d.is_string()) continue;
    auto it = kNames.find(d.get<std::string>());
    if (it != kNames.end()) d = it->second;
  }
  return list;
}

// The global rank at the other end of "send 0->1" / "recv 1<-0" (group ranks, as torch writes
// them, into the group's sorted global ranks as fr_trace reads them); -1 when not parseable.
int p2p_peer(const std::string& name, const std::vector<int>& sorted_ranks) {
  const size_t sp = name.find(' ');
  if (sp == std::string::npos) return -1;
  const std::string meta = name.substr(sp + 1);
  size_t arrow = meta.find("->");
  if (arrow == std::string::npos) arrow = meta.find("<-");
  if (arrow == std::string::npos) return -1;
  const std::string peer = meta.substr(arrow + 2);
  if (peer.empty() || peer.size() > 9 ||
      !std::all_of(peer.begin(), peer.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return -1;
  }
  const int idx = std::stoi(peer);
  return idx < static_cast<int>(sorted_ranks.size()) ? sorted_ranks[idx] : -1;
}

std::string op_of(const std::string& profiling_name) {
  const size_t colon = profiling_name.find(':');
  std::string op = colon == std::string::npos ? profiling_name : profiling_name.substr(colon + 1);
  return op.substr(0, op.find(' '));
}

json convert(const json& t, int rank) {
  if (!t.is_object()) bad(fmt::format("the pickle holds {}, not a dict", brief(t)));
  json out;
  out["rank"] = rank;
  const json* version = t.contains("version") ? &t["version"] : nullptr;
  out["reason"] = fmt::format("PyTorch flight-recorder dump (version {})",
                              version != nullptr ? brief(*version) : "unknown");
  // Groups: their global ranks, sorted as fr_trace reads them.
  if (!t.contains("pg_config") || !t["pg_config"].is_object()) bad("pg_config is not a dict");
  std::map<std::string, std::vector<int>> members;
  json config = json::object();
  int world = 0;
  for (const auto& [name, c] : t["pg_config"].items()) {
    const std::string where = fmt::format("pg_config[{}]: ", name);
    if (!c.is_object()) bad(where + "not a dict");
    json ranks = ranks_list(c.value("ranks", json()), where);
    std::vector<int> sorted;
    for (const json& r : ranks) {
      if (r.is_number_integer() && r.get<int64_t>() >= 0 && r.get<int64_t>() < kMaxAnalyzeWorld) {
        sorted.push_back(r.get<int>());
      }
    }
    std::sort(sorted.begin(), sorted.end());
    if (!sorted.empty()) world = std::max(world, sorted.back() + 1);
    members[name] = sorted;
    config[name] = {{"desc", c.value("desc", json(""))}, {"ranks", std::move(ranks)}};
  }
  out["world_size"] = std::max(world, rank + 1);
  out["pg_config"] = std::move(config);
  // Entries; torch's pg_id (an int uid) only links an entry to its pg_status.
  const json entries = t.value("entries", json::array());
  if (!entries.is_array()) bad(fmt::format("entries is {}, not a list", brief(entries)));
  std::map<std::string, std::string> uid_to_name;
  json list = json::array();
  for (size_t i = 0; i < entries.size(); ++i) {
    const json& e = entries[i];
    const std::string where = fmt::format("entry {}: ", i);
    if (!e.is_object()) bad(where + "not a dict");
    const json pg = e.value("process_group", json());
    if (!pg.is_array() || pg.empty() || !(pg[0].is_string() || pg[0].is_number_integer())) {
      bad(fmt::format("{}process_group is {}, not (name, desc)", where, brief(pg)));
    }
    const std::string name = pg[0].is_string() ? pg[0].get<std::string>() : pg[0].dump();
    if (e.contains("pg_id")) {
      const json& uid = e["pg_id"];
      uid_to_name[uid.is_string() ? uid.get<std::string>() : uid.dump()] = name;
    }
    json x;
    x["pg_id"] = name;
    for (const char* k : {"record_id", "profiling_name", "state", "time_created_ns",
                          "time_discovered_started_ns", "time_discovered_completed_ns"}) {
      if (e.contains(k)) x[k] = e[k];
    }
    x["collective_seq_id"] = seq_id(e.value("collective_seq_id", json()));
    x["p2p_seq_id"] = seq_id(e.value("p2p_seq_id", json()));
    x["input_sizes"] = e.value("input_sizes", json::array());
    x["input_dtypes"] = dtypes(e.value("input_dtypes", json()));
    x["output_sizes"] = e.value("output_sizes", json::array());
    x["output_dtypes"] = dtypes(e.value("output_dtypes", json()));
    if (e.contains("duration_ms")) x["duration_ms"] = e["duration_ms"];
    const json pn = e.value("profiling_name", json(""));
    const std::string pname = pn.is_string() ? pn.get<std::string>() : "";
    const std::string op = op_of(pname);
    x["is_p2p"] = e.contains("is_p2p") ? e["is_p2p"] : json(op == "send" || op == "recv");
    if (op == "send" || op == "recv") {
      auto m = members.find(name);
      x["peer"] = m == members.end() ? -1 : p2p_peer(pname, m->second);
    }
    list.push_back(std::move(x));
  }
  out["entries"] = std::move(list);
  // pg_status is keyed by str(pg_id); collie's by group name.
  json status = json::object();
  if (t.contains("pg_status") && t["pg_status"].is_object()) {
    for (const auto& [uid, st] : t["pg_status"].items()) {
      auto it = uid_to_name.find(uid);
      if (it == uid_to_name.end() || !st.is_object()) continue;
      json s = json::object();
      for (const char* k :
           {"last_enqueued_collective", "last_started_collective", "last_completed_collective"}) {
        // torch starts them at -1 (nothing yet): collie's 0.
        if (st.contains(k))
          s[k] = st[k].is_number_integer() && st[k].get<int64_t>() < 0 ? json(0) : st[k];
      }
      status[it->second] = std::move(s);
    }
  }
  out["pg_status"] = std::move(status);
  return out;
}

}  // namespace

std::optional<int> torch_dump_rank(std::string_view file_name) {
  size_t i = file_name.size();
  while (i > 0 && file_name[i - 1] >= '0' && file_name[i - 1] <= '9') --i;
  const std::string_view digits = file_name.substr(i);
  if (digits.empty() || digits.size() > 6) return std::nullopt;
  const int r = std::stoi(std::string(digits));
  if (r >= kMaxAnalyzeWorld) return std::nullopt;
  return r;
}

RankDump parse_torch_dump(std::string_view bytes, int rank) {
  const json t = parse_pickle(bytes);
  std::string text;
  try {
    text = convert(t, rank).dump(-1, ' ', false, json::error_handler_t::replace);
  } catch (const json::exception& e) {
    bad(e.what());
  }
  return parse_dump(text);
}

}  // namespace collie
