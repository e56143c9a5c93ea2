// parse_torch_dump: a PyTorch dump becomes a collie dump (FlightRecorder::dump_json's layout),
// validated by the steps of parse_dump (dump_parse.h): one set of range checks for both formats.
// The pickle is read into a PickleDoc and only the fields collie uses are converted, entry by
// entry, under the dump's InputBudget (frames, output sizes and the like are never copied).
// What torch does not record stays unknown: root (-1), failure (false), dump time (ages unknown),
// ring size (wrapped false).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "core/error.h"
#include "core/printable.h"
#include "debug/dump_parse.h"
#include "debug/pickle.h"
#include "debug/rank_ranges.h"
#include "debug/torch_dump.h"

namespace collie {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& what) {
  throw InvalidArgument(fmt::format("invalid PyTorch flight-recorder dump: {}", what));
}

std::string brief(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return printable(s.size() > 60 ? s.substr(0, 57) + "..." : s);
}

// pg_config ranks: torch writes the str "[0, 1]" (a list of numbers, so O(N) per dump and read
// here without a tree of its own); its tests sometimes a list. A str becomes collie's ranges
// ("0-4095", rank_ranges.h), a list stays one: read_dump_header checks either.
json ranks_of(const json& v, const std::string& where, std::vector<int>* sorted) {
  if (v.is_array()) {
    for (const json& r : v) {
      if (r.is_number_integer() && r.get<int64_t>() >= 0 && r.get<int64_t>() < kMaxAnalyzeWorld)
        sorted->push_back(r.get<int>());
    }
    std::sort(sorted->begin(), sorted->end());
    return v;
  }
  if (!v.is_string()) bad(fmt::format("{}ranks is {}, not \"[0, 1, ...]\"", where, brief(v)));
  const std::string& s = v.get_ref<const std::string&>();
  std::vector<int> list;
  size_t i = 0;
  auto skip = [&] {
    while (i < s.size() && s[i] == ' ') ++i;
  };
  skip();
  if (i >= s.size() || s[i] != '[') bad(fmt::format("{}ranks '{}' is not a list", where, brief(v)));
  ++i;
  skip();
  while (i < s.size() && s[i] != ']') {
    const size_t start = i;
    int r = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && i - start < 9)
      r = r * 10 + (s[i++] - '0');
    if (i == start) bad(fmt::format("{}ranks '{}' holds a non-rank", where, brief(v)));
    list.push_back(r);
    skip();
    if (i < s.size() && s[i] == ',') {
      ++i;
      skip();
    } else if (i < s.size() && s[i] != ']') {
      bad(fmt::format("{}ranks '{}' is not a list of ranks", where, brief(v)));
    }
  }
  if (i >= s.size()) bad(fmt::format("{}ranks '{}' has no closing ]", where, brief(v)));
  for (int r : list) {
    if (r < kMaxAnalyzeWorld) sorted->push_back(r);
  }
  std::sort(sorted->begin(), sorted->end());
  return rank_ranges(list);
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

using Ref = PickleDoc::Ref;

// A str or int as text (torch's group names and uids); nullopt for anything else.
std::optional<std::string> name_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return v.dump();
  return std::nullopt;
}

class Converter {
 public:
  // Work is bounded like memory: a value memoized once and referenced by every entry is
  // converted again for each, so every value visited and dict item looked at is a step, at most
  // kDumpStepsPerByte per byte of the pickle.
  Converter(const PickleDoc& doc, InputBudget& budget, size_t bytes)
      : doc_(doc),
        budget_(budget),
        steps_(kDumpStepsPerByte * bytes + (size_t{1} << 20), "PyTorch flight-recorder dump",
               "steps") {}

  // The converted fields of one entry (or the header) are dropped once read: they are charged to
  // a scratch budget of what the dump's budget has left, so the peak stays within that budget.
  RankDump run(int rank) {
    InputBudget first = scratch();
    scratch_ = &first;
    const Ref root = doc_.root();
    if (doc_.kind(root) != PickleDoc::Kind::Dict) {
      bad(fmt::format("the pickle holds {}, not a dict", brief(to_json(root))));
    }
    const std::optional<Ref> entries = doc_.get(root, "entries", &steps_);
    if (entries && doc_.kind(*entries) != PickleDoc::Kind::List &&
        doc_.kind(*entries) != PickleDoc::Kind::Tuple) {
      bad(fmt::format("entries is {}, not a list", brief(to_json(*entries))));
    }
    // First pass: each entry's group (torch's pg_id, an int uid, only links it to pg_status).
    size_t i = 0;
    if (entries) {
      doc_.for_each(*entries, [&](Ref e) {
        InputBudget each = scratch();
        scratch_ = &each;
        group_of(e, i++);
      });
    }
    RankDump d;
    {
      InputBudget head = scratch();
      scratch_ = &head;
      read_dump_header(header(root, rank), &d, budget_);
    }
    i = 0;
    if (entries) {
      doc_.for_each(*entries, [&](Ref e) {
        InputBudget each = scratch();
        scratch_ = &each;
        DumpEntry x = read_dump_entry(entry(e, i), i);
        keep_dump_entry(std::move(x), &d, budget_);
        ++i;
      });
    }
    check_dump_entries(d);
    return d;
  }

 private:
  InputBudget scratch() const { return budget_.scratch(); }
  json to_json(Ref r) { return doc_.to_json(r, *scratch_, &steps_); }
  json field(Ref dict, const char* key) {
    const std::optional<Ref> v = doc_.get(dict, key, &steps_);
    return v ? to_json(*v) : json();
  }

  // The (name of the) group an entry belongs to; records torch's uid -> name.
  std::string group_of(Ref e, size_t i) {
    const std::string where = fmt::format("entry {}: ", i);
    if (doc_.kind(e) != PickleDoc::Kind::Dict) bad(where + "not a dict");
    const json pg = field(e, "process_group");
    const std::optional<std::string> name =
        pg.is_array() && !pg.empty() ? name_of(pg[0]) : std::nullopt;
    if (!name) bad(fmt::format("{}process_group is {}, not (name, desc)", where, brief(pg)));
    if (const json uid = field(e, "pg_id"); !uid.is_null()) {
      uid_to_name_[uid.is_string() ? uid.get<std::string>() : uid.dump()] = *name;
    }
    return *name;
  }

  json header(Ref root, int rank) {
    json out;
    out["rank"] = rank;
    const std::optional<Ref> version = doc_.get(root, "version", &steps_);
    out["reason"] = fmt::format("PyTorch flight-recorder dump (version {})",
                                version ? brief(to_json(*version)) : "unknown");
    // torch writes no host; a writer that adds one ("hostname", as collie's JSON) is read.
    if (json host = field(root, "hostname"); host.is_string()) out["hostname"] = std::move(host);
    // Groups: their global ranks, sorted as fr_trace reads them.
    const json pg_config = field(root, "pg_config");
    if (!pg_config.is_object()) bad("pg_config is not a dict");
    json config = json::object();
    int world = 0;
    for (const auto& [name, c] : pg_config.items()) {
      const std::string where = fmt::format("pg_config[{}]: ", printable(name));
      if (!c.is_object()) bad(where + "not a dict");
      std::vector<int> sorted;
      json ranks = ranks_of(c.value("ranks", json()), where, &sorted);
      if (!sorted.empty()) world = std::max(world, sorted.back() + 1);
      members_[name] = sorted;
      config[name] = {{"desc", c.value("desc", json(""))}, {"ranks", std::move(ranks)}};
    }
    out["world_size"] = std::max(world, rank + 1);
    out["pg_config"] = std::move(config);
    // pg_status is keyed by str(pg_id); collie's by group name.
    json status = json::object();
    const json pg_status = field(root, "pg_status");
    if (pg_status.is_object()) {
      for (const auto& [uid, st] : pg_status.items()) {
        auto it = uid_to_name_.find(uid);
        if (it == uid_to_name_.end() || !st.is_object()) continue;
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
    out["entries"] = json::array();
    return out;
  }

  // One entry in collie's layout: only the fields collie reads are converted.
  json entry(Ref e, size_t i) {
    const std::string name = group_of(e, i);
    json x;
    x["pg_id"] = name;
    for (const char* k : {"record_id", "profiling_name", "state", "time_created_ns",
                          "time_discovered_started_ns", "time_discovered_completed_ns"}) {
      if (json v = field(e, k); !v.is_null()) x[k] = std::move(v);
    }
    x["collective_seq_id"] = seq_id(field(e, "collective_seq_id"));
    x["p2p_seq_id"] = seq_id(field(e, "p2p_seq_id"));
    for (const char* k : {"input_sizes", "output_sizes"}) {
      json sizes = field(e, k);
      x[k] = sizes.is_null() ? json::array() : std::move(sizes);
    }
    x["input_dtypes"] = dtypes(field(e, "input_dtypes"));
    x["output_dtypes"] = dtypes(field(e, "output_dtypes"));
    if (json d = field(e, "duration_ms"); !d.is_null()) x["duration_ms"] = std::move(d);
    const json pn = field(e, "profiling_name");
    const std::string pname = pn.is_string() ? pn.get<std::string>() : "";
    const std::string op = op_of(pname);
    const json is_p2p = field(e, "is_p2p");
    x["is_p2p"] = is_p2p.is_null() ? json(op == "send" || op == "recv") : is_p2p;
    if (op == "send" || op == "recv") {
      auto m = members_.find(name);
      x["peer"] = m == members_.end() ? -1 : p2p_peer(pname, m->second);
    }
    return x;
  }

  const PickleDoc& doc_;
  InputBudget& budget_;
  InputBudget* scratch_ = nullptr;  // the current entry's (or the header's)
  InputBudget steps_;
  std::map<std::string, std::string> uid_to_name_;
  std::map<std::string, std::vector<int>> members_;
};

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
  InputBudget budget = dump_budget(bytes.size(), "PyTorch flight-recorder dump");
  const PickleDoc doc(bytes, budget);
  try {
    return Converter(doc, budget, bytes.size()).run(rank);
  } catch (const json::exception& e) {
    bad(e.what());
  }
}

}  // namespace collie
