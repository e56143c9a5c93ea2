// Reads flight-recorder dumps (parse_dump, parse_dump_file in analyzer.h) for the analyzer.
// A dump is input from a file or from a remote rank, so nothing in it is trusted: every number
// is range-checked (a seq id is a non-negative integer, a rank is in [0, kMaxAnalyzeWorld)),
// nesting is limited, a key given twice is refused, every string is made printable, and what
// is kept is charged to the dump's InputBudget (dump_parse.h states the bound). collie's JSON is
// parsed by simdjson (a folder of 16,384 dumps is tens of GB of JSON) into its tape, and each
// entry is converted straight from it, never through a tree of its own; the checks of each
// field are dump_fields.h's, shared with PyTorch's layout. Files are opened as
// core/regular_file.h opens them: a FIFO or device planted in a shared dump directory is
// refused without blocking.
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/printable.h"
#include "core/regular_file.h"
#include "debug/analyzer.h"
#include "debug/dump_fields.h"
#include "debug/dump_parse.h"
#include "debug/rank_ranges.h"

namespace collie {
namespace {

using dump_fields::bad;
using dump_fields::entry_key;
using dump_fields::kEntryKeys;
using nlohmann::json;

// Deepest nesting a real dump has is 4 (root, entries, entry, input_sizes, dims).
constexpr int kMaxDepth = 16;
// A read buffer larger than this (a dump of a ring far above the default) is freed after use.
constexpr size_t kKeptBufferBytes = size_t{64} << 20;
// A host name is at most 64 bytes on Linux (HOST_NAME_MAX); escapes may make it longer.
constexpr size_t kMaxHostNameChars = 255;

// dump_fields.h's views of nlohmann's tree.
class NValue {
 public:
  explicit NValue(const json& v) : v_(&v) {}
  bool is_null() const { return v_->is_null(); }
  bool is_bool() const { return v_->is_boolean(); }
  bool boolean() const { return v_->get<bool>(); }
  // Non-negatives from JSON text are unsigned in nlohmann's tree, from a pickle signed.
  bool is_int() const {
    return v_->is_number_integer() &&
           !(v_->is_number_unsigned() &&
             v_->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  }
  bool is_uint() const {
    return v_->is_number_unsigned() || (v_->is_number_integer() && v_->get<int64_t>() >= 0);
  }
  bool is_number() const { return v_->is_number(); }
  int64_t i64() const { return v_->get<int64_t>(); }
  uint64_t u64() const { return v_->get<uint64_t>(); }
  double dbl() const { return v_->get<double>(); }
  bool is_string() const { return v_->is_string(); }
  std::string_view str() const { return v_->get_ref<const std::string&>(); }
  std::string text() const { return v_->dump(); }

 private:
  const json* v_;
};

class NObject {
 public:
  explicit NObject(const json& o) : o_(o) {}
  std::optional<NValue> get(const dump_fields::Key& key) const {
    auto it = o_.find(key.name);
    if (it == o_.end() || it->is_null()) return std::nullopt;
    return NValue(*it);
  }

 private:
  const json& o_;
};

}  // namespace

DumpEntry read_dump_entry(const json& e, size_t index) {
  if (!e.is_object()) bad(fmt::format("entry {}: not an object", index));
  return dump_fields::read_entry(NObject(e), index);
}

InputBudget dump_budget(size_t dump_bytes, const std::string& what) {
  return InputBudget(kDumpMemoryPerByte * dump_bytes + kDumpMemorySlack, what);
}

void keep_dump_entry(DumpEntry e, RankDump* d, InputBudget& budget) {
  size_t bytes = 0;
  for (const std::string* s : {&e.pg_id, &e.profiling_name, &e.op, &e.sizes, &e.dtypes, &e.state}) {
    if (s->size() > 15) bytes += s->capacity() + 1;  // beyond the small-string buffer
  }
  if (d->entries.size() == d->entries.capacity()) {
    bytes += std::max<size_t>(d->entries.capacity(), 4) * sizeof(DumpEntry);  // the regrowth
  }
  budget.charge(bytes);
  d->entries.push_back(std::move(e));
}

void read_dump_header(const json& j, RankDump* out, InputBudget& budget) {
  using namespace dump_fields;
  RankDump& d = *out;
  if (!j.is_object()) bad("not a JSON object");
  const NObject top(j);
  const auto rank = top.get("rank");
  if (!rank) bad("rank is missing");
  d.rank = get_rank(*rank, "rank", 0);
  if (const auto w = top.get("world_size")) {
    const auto n = int_in(*w, 0, kMaxAnalyzeWorld);
    if (!n) {
      bad(fmt::format("world_size {} is not in 0..{} (the most ranks collie analyzes)", w->text(),
                      kMaxAnalyzeWorld));
    }
    d.world_size = static_cast<int>(*n);
  }
  if (d.world_size > 0 && d.rank >= d.world_size) {
    bad(fmt::format("rank {} is not below world_size {}", d.rank, d.world_size));
  }
  d.wrapped = get_bool(top, "wrapped");
  d.buffer_size = get_u64(top, "buffer_size", "");
  d.total_recorded = get_u64(top, "total_recorded", "");
  d.reason = get_str(top, "reason", "", false);
  d.trigger = get_str(top, "trigger", "", false);
  if (d.trigger != "request" && d.trigger != "failure") d.trigger.clear();
  d.dump_time_ns = get_i64(top, "dump_time_ns", "");
  d.host = get_str(top, "hostname", "", false);
  if (d.host.size() > kMaxHostNameChars) {
    bad(fmt::format("hostname '{}...' is longer than {} characters", d.host.substr(0, 40),
                    kMaxHostNameChars));
  }
  auto config = j.find("pg_config");
  if (config == j.end() || !config->is_object()) bad("pg_config is not an object");
  auto status = j.find("pg_status");
  const bool has_status = status != j.end() && status->is_object();
  for (const auto& [raw_id, c] : config->items()) {
    const std::string id = printable(raw_id);
    const std::string where = fmt::format("pg_config[{}]: ", id);
    if (!c.is_object()) bad(where + "not an object");
    RankDump::Group g;
    g.desc = get_str(NObject(c), "desc", where, false);
    auto ranks = c.find("ranks");
    if (ranks != c.end() && ranks->is_string()) {
      // Version 2: "0-4095"; what it expands to is charged to the dump's budget.
      try {
        g.ranks = parse_rank_ranges(ranks->get_ref<const std::string&>(), kMaxAnalyzeWorld,
                                    kMaxAnalyzeWorld);
      } catch (const InvalidArgument& e) {
        bad(where + e.what());
      }
      budget.charge(g.ranks.size() * sizeof(int));
    } else {
      if (ranks == c.end() || !ranks->is_array()) bad(where + "ranks is not a list");
      g.ranks.reserve(ranks->size());
      for (const json& r : *ranks) g.ranks.push_back(get_rank(NValue(r), where + "rank", 0));
    }
    if (has_status) {
      if (auto st = status->find(raw_id); st != status->end()) {
        const std::string sw = fmt::format("pg_status[{}]: ", id);
        if (!st->is_object()) bad(sw + "not an object");
        g.last_enqueued = get_u64(NObject(*st), "last_enqueued_collective", sw);
        g.last_started = get_u64(NObject(*st), "last_started_collective", sw);
        g.last_completed = get_u64(NObject(*st), "last_completed_collective", sw);
      }
    }
    d.groups[id] = std::move(g);
  }
}

void check_dump_entries(const RankDump& d) {
  for (size_t i = 0; i < d.entries.size(); ++i) {
    if (d.groups.count(d.entries[i].pg_id) == 0) {
      bad(fmt::format("entry {}: group '{}' is not in pg_config", i, d.entries[i].pg_id));
    }
  }
}

namespace {

namespace dom = simdjson::dom;

// dump_fields.h's views of simdjson's tape.
class SValue {
 public:
  explicit SValue(dom::element e) : e_(e) {}
  bool is_null() const { return e_.is_null(); }
  bool is_bool() const { return e_.is_bool(); }
  bool boolean() const { return e_.get_bool().value_unsafe(); }
  bool is_int() const { return e_.is_int64(); }
  bool is_uint() const { return e_.is_uint64(); }
  bool is_number() const { return e_.is_number(); }
  int64_t i64() const { return e_.get_int64().value_unsafe(); }
  uint64_t u64() const { return e_.get_uint64().value_unsafe(); }
  double dbl() const { return e_.get_double().value_unsafe(); }
  bool is_string() const { return e_.is_string(); }
  std::string_view str() const { return e_.get_string().value_unsafe(); }
  // The value as compact JSON, byte for byte what simdjson::minify writes.
  std::string text() const {
    std::string out;
    return compact(e_, out, 0) ? out : simdjson::minify(e_);
  }

 private:
  // What entries hold beyond scalars, sizes and dtypes (arrays of integers, of arrays of them, of
  // plain strings), written straight into one string: minify's builder, a growing vector of
  // chars copied into a string at the end, was a tenth of `collie analyze`'s time. false for
  // anything else (doubles, objects, strings that need an escape, nesting deeper than 4): minify
  // writes those.
  static bool compact(dom::element v, std::string& out, int depth) {
    switch (v.type()) {
      case dom::element_type::ARRAY: {
        if (depth >= 4) return false;
        out += '[';
        bool first = true;
        const dom::array items = v.get_array().value_unsafe();
        for (dom::element x : items) {
          if (!first) out += ',';
          first = false;
          if (!compact(x, out, depth + 1)) return false;
        }
        out += ']';
        return true;
      }
      case dom::element_type::INT64:
        append_number(out, v.get_int64().value_unsafe());
        return true;
      case dom::element_type::UINT64:
        append_number(out, v.get_uint64().value_unsafe());
        return true;
      case dom::element_type::STRING: {
        const std::string_view str = v.get_string().value_unsafe();
        for (const char c : str) {
          const auto u = static_cast<unsigned char>(c);
          if (u < 0x20 || u >= 0x7f || c == '"' || c == '\\') return false;
        }
        out += '"';
        out += str;
        out += '"';
        return true;
      }
      case dom::element_type::BOOL:
        out += v.get_bool().value_unsafe() ? "true" : "false";
        return true;
      case dom::element_type::NULL_VALUE:
        out += "null";
        return true;
      default:
        return false;  // DOUBLE (minify's own shortest form), OBJECT
    }
  }
  template <class I>
  static void append_number(std::string& out, I n) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, n);
    out.append(buf, r.ptr);
  }

  dom::element e_;
};

// Where a value is, for messages: a chain of keys and indexes on the stack, written out only
// when something is wrong ("/entries/5/input_sizes/0").
struct Path {
  const Path* parent = nullptr;
  std::string_view key;
  size_t index = 0;
  std::string str() const {
    std::string up = parent != nullptr ? parent->str() : "";
    return key.empty() && parent != nullptr
               ? fmt::format("{}/{}", up, index)
               : fmt::format("{}/{}", up, printable(key.substr(0, 40)));
  }
};

[[noreturn]] void twice(std::string_view key, const Path& where) {
  throw InvalidArgument(fmt::format("duplicate key '{}' in the object at {}",
                                    printable(key.substr(0, 40)), where.str()));
}

// What an entry holds beyond its scalars (sizes, dtypes, anything nobody reads) is still checked
// for keys given twice and counted (kMaxDumpEntryValues).
void check_value(dom::element v, const Path& at, size_t& values) {
  if (++values > kMaxDumpEntryValues)
    bad(fmt::format("{} holds more than {} values", at.str(), kMaxDumpEntryValues));
  if (v.is_object()) {
    std::vector<std::string_view> keys;
    const dom::object o = v.get_object().value_unsafe();
    for (dom::key_value_pair kv : o) {
      if (std::find(keys.begin(), keys.end(), kv.key) != keys.end()) twice(kv.key, at);
      keys.push_back(kv.key);
      check_value(kv.value, Path{&at, kv.key}, values);
    }
  } else if (v.is_array()) {
    size_t i = 0;
    const dom::array a = v.get_array().value_unsafe();
    for (dom::element x : a) check_value(x, Path{&at, {}, i++}, values);
  }
}

class SEntry {
 public:
  SEntry(dom::object o, const Path& at) {
    size_t values = 0;
    std::array<std::string_view, 32> other;  // keys the converter does not read
    size_t others = 0;
    for (dom::key_value_pair kv : o) {
      const int k = entry_key(kv.key);
      if (k >= 0) {
        if (slots_[k]) twice(kv.key, at);
        slots_[k] = kv.value;
      } else {
        if (std::find(other.begin(), other.begin() + others, kv.key) != other.begin() + others)
          twice(kv.key, at);
        if (others == other.size())
          bad(fmt::format("{} holds more than {} keys", at.str(), 32 + kEntryKeys.size()));
        other[others++] = kv.key;
      }
      if (kv.value.is_object() || kv.value.is_array()) {
        check_value(kv.value, Path{&at, kv.key}, values);
      } else {
        ++values;
      }
    }
  }
  std::optional<SValue> get(const dump_fields::Key& key) const {
    const int k = key.slot != dump_fields::Key::kNotLookedUp ? key.slot : entry_key(key.name);
    if (k < 0 || !slots_[k] || slots_[k]->is_null()) return std::nullopt;
    return SValue(*slots_[k]);
  }

 private:
  std::array<std::optional<dom::element>, kEntryKeys.size()> slots_{};
};

// A tape value as nlohmann's tree, for the header (small: the groups, their status, the facts
// of the dump), keys given twice refused; charged to the budget like the tree it replaces.
json to_tree(dom::element v, const std::string& path, InputBudget& budget) {
  budget.charge(64);
  switch (v.type()) {
    case dom::element_type::OBJECT: {
      json o = json::object();
      const dom::object obj = v.get_object().value_unsafe();
      for (dom::key_value_pair kv : obj) {
        const std::string key(kv.key);
        if (o.contains(key)) {
          throw InvalidArgument(fmt::format("duplicate key '{}' in the object at {}",
                                            printable(key.substr(0, 40)), path));
        }
        o[key] =
            to_tree(kv.value, fmt::format("{}/{}", path, printable(key.substr(0, 40))), budget);
      }
      return o;
    }
    case dom::element_type::ARRAY: {
      json a = json::array();
      size_t i = 0;
      const dom::array arr = v.get_array().value_unsafe();
      for (dom::element x : arr) a.push_back(to_tree(x, fmt::format("{}/{}", path, i++), budget));
      return a;
    }
    case dom::element_type::INT64:
      return v.get_int64().value_unsafe();
    case dom::element_type::UINT64:
      return v.get_uint64().value_unsafe();
    case dom::element_type::DOUBLE:
      return v.get_double().value_unsafe();
    case dom::element_type::STRING:
      return std::string(v.get_string().value_unsafe());
    case dom::element_type::BOOL:
      return v.get_bool().value_unsafe();
    case dom::element_type::NULL_VALUE:
      return nullptr;
  }
  return nullptr;
}

// One parser per thread: its buffers are reused from dump to dump.
dom::parser& thread_parser() {
  thread_local dom::parser p = [] {
    dom::parser x;
    // Only the depth matters here; a failed allocation is retried by parse() and reported there.
    if (x.allocate(1 << 16, kMaxDepth) != simdjson::SUCCESS) x = dom::parser();
    return x;
  }();
  return p;
}

// `padded`: text is followed by at least SIMDJSON_PADDING readable bytes, so the parser reads it
// where it is instead of copying it into a padded buffer of its own.
RankDump parse(std::string_view text, const std::string& what, bool padded) {
  RankDump d;
  InputBudget budget = dump_budget(text.size(), what);
  dom::element root;
  if (const auto err = thread_parser().parse(text.data(), text.size(), !padded).get(root); err) {
    if (err == simdjson::DEPTH_ERROR) bad(fmt::format("nested deeper than {} levels", kMaxDepth));
    throw InvalidArgument(
        fmt::format("not a collie flight-recorder dump: {}", simdjson::error_message(err)));
  }
  if (!root.is_object()) bad("not a JSON object");
  json header = json::object();
  std::optional<dom::array> entries;
  bool entries_seen = false;
  const dom::object fields = root.get_object().value_unsafe();
  for (dom::key_value_pair kv : fields) {
    const std::string key(kv.key);
    if (header.contains(key) || (key == "entries" && entries_seen)) {
      throw InvalidArgument(
          fmt::format("duplicate key '{}' in the object at the top", printable(key.substr(0, 40))));
    }
    if (key != "entries") {
      header[key] = to_tree(kv.value, fmt::format("/{}", printable(key.substr(0, 40))), budget);
      continue;
    }
    entries_seen = true;
    if (kv.value.is_array()) entries = kv.value.get_array().value_unsafe();
  }
  read_dump_header(header, &d, budget);
  if (!entries) bad("entries is not a list");
  const Path top{nullptr, "entries"};
  size_t index = 0;
  for (dom::element e : *entries) {
    if (!e.is_object()) {
      bad(fmt::format("entries holds {}, not an object",
                      printable(SValue(e).text().substr(0, 60))));
    }
    const dom::object fields = e.get_object().value_unsafe();
    const SEntry entry(fields, Path{&top, {}, index});
    keep_dump_entry(dump_fields::read_entry(entry, index), &d, budget);
    ++index;
  }
  check_dump_entries(d);
  return d;
}

}  // namespace

RankDump parse_dump(const std::string& text) {
  return parse(text, "flight-recorder dump", /*padded=*/false);
}

RankDump parse_dump_file(const std::string& path) {
  RegularFile f(path, kMaxJsonDumpBytes);
  // One buffer per thread, with the parser's padding, reused from dump to dump: each byte is
  // read once from the file and parsed where it lies (no zero fill, no copy to a padded buffer).
  // A dump far larger than one of the default ring gets a buffer of its own, freed after it.
  thread_local std::unique_ptr<char[]> kept;
  thread_local size_t kept_room = 0;
  std::unique_ptr<char[]> own;
  const size_t need = f.size() + simdjson::SIMDJSON_PADDING;
  if (need > kKeptBufferBytes) {
    own = std::make_unique_for_overwrite<char[]>(need);
  } else if (need > kept_room) {
    kept = std::make_unique_for_overwrite<char[]>(need);
    kept_room = need;
  }
  char* const buf = own ? own.get() : kept.get();
  f.read_into(buf);
  std::memset(buf + f.size(), 0, simdjson::SIMDJSON_PADDING);
  return parse(std::string_view(buf, f.size()), "dump " + path, /*padded=*/true);
}

}  // namespace collie
