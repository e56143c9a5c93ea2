// Reads flight-recorder dumps (parse_dump, load_dump_dir in analyzer.h) for the analyzer.
// A dump is input from a file or from a remote rank, so nothing in it is trusted: every number
// is range-checked (a seq id is a non-negative integer, a rank is in [0, kMaxAnalyzeWorld)),
// nesting is limited, a key given twice is refused, every string is made printable, and
// entries are converted one at a time while the JSON is parsed (the parse callback drops each
// entry's JSON tree as soon as it is converted), so memory follows the number of entries, not
// the size of a whole JSON document; what is kept is charged to the dump's InputBudget
// (dump_parse.h states the bound). Files are opened as core/regular_file.h opens them: a FIFO
// or device planted in a shared dump directory is refused without blocking.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "core/error.h"
#include "core/json_input.h"
#include "core/printable.h"
#include "core/regular_file.h"
#include "debug/analyzer.h"
#include "debug/dump_parse.h"
#include "debug/pickle.h"
#include "debug/torch_dump.h"

namespace collie {
namespace {

using nlohmann::json;

// Deepest nesting a real dump has is 4 (root, entries, entry, input_sizes, dims).
constexpr int kMaxDepth = 16;

[[noreturn]] void bad(const std::string& what) {
  throw InvalidArgument(fmt::format("invalid flight-recorder dump: {}", what));
}

std::string op_of(const std::string& profiling_name) {
  auto colon = profiling_name.find(':');
  std::string op = colon == std::string::npos ? profiling_name : profiling_name.substr(colon + 1);
  auto space = op.find(' ');
  return space == std::string::npos ? op : op.substr(0, space);
}

const json* find(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

uint64_t get_u64(const json& j, const char* key, const std::string& where) {
  const json* v = find(j, key);
  if (v == nullptr) return 0;
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer()) {
    // Signed when it came from a pickle (an int64); JSON text gives non-negatives unsigned.
    if (v->get<int64_t>() >= 0) return static_cast<uint64_t>(v->get<int64_t>());
    bad(fmt::format("{}{} {} is negative", where, key, v->dump()));
  }
  bad(fmt::format("{}{} is {}, not a non-negative integer", where, key, v->dump()));
}

int64_t get_i64(const json& j, const char* key, const std::string& where) {
  const json* v = find(j, key);
  if (v == nullptr) return 0;
  if (v->is_number_unsigned() &&
      v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    bad(fmt::format("{}{} {} is out of range", where, key, v->dump()));
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  bad(fmt::format("{}{} is {}, not an integer", where, key, v->dump()));
}

// get_i64, with null read as 0 (PyTorch and collie write null for "not yet").
int64_t get_i64_or_null(const json& j, const char* key, const std::string& where) {
  const json* v = find(j, key);
  return v == nullptr || v->is_null() ? 0 : get_i64(j, key, where);
}

// An integer in [lo, hi], or nullopt (not an integer, or out of range).
std::optional<int64_t> int_in(const json& v, int64_t lo, int64_t hi) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi) || static_cast<int64_t>(u) < lo) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (!v.is_number_integer()) return std::nullopt;
  const int64_t i = v.get<int64_t>();
  if (i < lo || i > hi) return std::nullopt;
  return i;
}

// A rank: an integer in [lo, kMaxAnalyzeWorld).
int get_rank(const json& v, const std::string& what, int lo) {
  const auto r = int_in(v, lo, kMaxAnalyzeWorld - 1);
  if (!r)
    bad(fmt::format("{} {} is not a rank in {}..{}", what, v.dump(), lo, kMaxAnalyzeWorld - 1));
  return static_cast<int>(*r);
}

int get_rank_or(const json& j, const char* key, int def, int lo, const std::string& where) {
  const json* v = find(j, key);
  return v == nullptr ? def : get_rank(*v, where + key, lo);
}

bool get_bool(const json& j, const char* key) {
  const json* v = find(j, key);
  if (v == nullptr) return false;
  if (!v->is_boolean()) bad(fmt::format("{} is {}, not true/false", key, v->dump()));
  return v->get<bool>();
}

std::string get_str(const json& j, const char* key, const std::string& where, bool required) {
  const json* v = find(j, key);
  if (v == nullptr) {
    if (required) bad(fmt::format("{}{} is missing", where, key));
    return "";
  }
  if (!v->is_string()) bad(fmt::format("{}{} is {}, not a string", where, key, v->dump()));
  return printable(v->get_ref<const std::string&>());
}

}  // namespace

DumpEntry read_dump_entry(const json& e, size_t index) {
  const std::string where = fmt::format("entry {}: ", index);
  if (!e.is_object()) bad(fmt::format("{}not an object", where));
  DumpEntry x;
  x.record_id = get_u64(e, "record_id", where);
  x.pg_id = get_str(e, "pg_id", where, true);
  x.collective_seq_id = get_u64(e, "collective_seq_id", where);
  x.p2p_seq_id = get_u64(e, "p2p_seq_id", where);
  x.profiling_name = get_str(e, "profiling_name", where, true);
  x.op = op_of(x.profiling_name);
  // Dumped in place (value() would copy the whole list first).
  auto text = [&](const char* key) {
    const json* v = find(e, key);
    return v != nullptr ? printable(v->dump()) : std::string("[]");
  };
  x.sizes = text("input_sizes");
  x.dtypes = text("input_dtypes");
  x.output_sizes = text("output_sizes");
  x.output_dtypes = text("output_dtypes");
  x.reduce_op = get_str(e, "reduce_op", where, false);
  if (const json* d = find(e, "duration_ms"); d != nullptr) {
    if (!d->is_number() || !(d->get<double>() >= 0 && d->get<double>() < 1e12))
      bad(fmt::format("{}duration_ms {} is not a duration in ms", where, printable(d->dump())));
    x.duration_ms = d->get<double>();
  }
  x.state = get_str(e, "state", where, true);
  x.failed = get_bool(e, "failed");
  x.is_p2p = get_bool(e, "is_p2p");
  x.root = get_rank_or(e, "root", -1, -1, where);
  x.peer = get_rank_or(e, "peer", -1, -1, where);
  x.time_created_ns = get_i64(e, "time_created_ns", where);
  x.time_started_ns = get_i64_or_null(e, "time_discovered_started_ns", where);
  x.time_completed_ns = get_i64_or_null(e, "time_discovered_completed_ns", where);
  return x;
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

void read_dump_header(const json& j, RankDump* out) {
  RankDump& d = *out;
  if (!j.is_object()) bad("not a JSON object");
  const json* rank = find(j, "rank");
  if (rank == nullptr) bad("rank is missing");
  d.rank = get_rank(*rank, "rank", 0);
  if (const json* w = find(j, "world_size"); w != nullptr) {
    const auto n = int_in(*w, 0, kMaxAnalyzeWorld);
    if (!n) {
      bad(fmt::format("world_size {} is not in 0..{} (the most ranks collie analyzes)", w->dump(),
                      kMaxAnalyzeWorld));
    }
    d.world_size = static_cast<int>(*n);
  }
  if (d.world_size > 0 && d.rank >= d.world_size) {
    bad(fmt::format("rank {} is not below world_size {}", d.rank, d.world_size));
  }
  d.wrapped = get_bool(j, "wrapped");
  d.buffer_size = get_u64(j, "buffer_size", "");
  d.total_recorded = get_u64(j, "total_recorded", "");
  d.reason = get_str(j, "reason", "", false);
  d.trigger = get_str(j, "trigger", "", false);
  if (d.trigger != "request" && d.trigger != "failure") d.trigger.clear();
  d.dump_time_ns = get_i64(j, "dump_time_ns", "");
  const json* config = find(j, "pg_config");
  if (config == nullptr || !config->is_object()) bad("pg_config is not an object");
  const json* status = find(j, "pg_status");
  for (const auto& [raw_id, c] : config->items()) {
    const std::string id = printable(raw_id);
    const std::string where = fmt::format("pg_config[{}]: ", id);
    if (!c.is_object()) bad(where + "not an object");
    RankDump::Group g;
    g.desc = get_str(c, "desc", where, false);
    const json* ranks = find(c, "ranks");
    if (ranks == nullptr || !ranks->is_array()) bad(where + "ranks is not a list");
    g.ranks.reserve(ranks->size());
    for (const json& r : *ranks) g.ranks.push_back(get_rank(r, where + "rank", 0));
    if (status != nullptr && status->is_object()) {
      if (auto st = status->find(raw_id); st != status->end()) {
        const std::string sw = fmt::format("pg_status[{}]: ", id);
        if (!st->is_object()) bad(sw + "not an object");
        g.last_enqueued = get_u64(*st, "last_enqueued_collective", sw);
        g.last_started = get_u64(*st, "last_started_collective", sw);
        g.last_completed = get_u64(*st, "last_completed_collective", sw);
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

// Parses with a callback: keys given twice and deep nesting are refused (core/json_input.h),
// each element of the top-level "entries" array becomes a DumpEntry and is dropped from the tree
// as soon as its object ends, an entry holds at most kMaxDumpEntryValues values, and every value
// kept outside the entries is charged to the budget.
RankDump parse(std::istream* in, const std::string* text, size_t bytes, const std::string& what) {
  RankDump d;
  InputBudget budget = dump_budget(bytes, what);
  JsonShapeCheck shape(kMaxDepth);
  std::string top_key;
  size_t index = 0;
  size_t entry_values = 0;
  auto cb = [&](int depth, json::parse_event_t event, json& parsed) -> bool {
    shape.on_event(depth, event, parsed);
    const bool in_entries = depth >= 2 && top_key == "entries";
    if (event == json::parse_event_t::key) {
      if (depth == 1) top_key = parsed.get<std::string>();
      return true;
    }
    if (event == json::parse_event_t::object_end && depth == 2 && top_key == "entries") {
      keep_dump_entry(read_dump_entry(parsed, index++), &d, budget);
      entry_values = 0;
      return false;
    }
    if (event == json::parse_event_t::value || event == json::parse_event_t::object_start ||
        event == json::parse_event_t::array_start) {
      if (!in_entries) {
        budget.charge(64);  // a value of the tree kept until the end (pg_config, ...)
      } else if (depth >= 3 && ++entry_values > kMaxDumpEntryValues) {
        bad(fmt::format("entry {} holds more than {} values", index, kMaxDumpEntryValues));
      }
    }
    return true;
  };
  json j;
  try {
    j = in != nullptr ? json::parse(*in, cb) : json::parse(*text, cb);
    read_dump_header(j, &d);
  } catch (const json::exception& e) {
    throw InvalidArgument(fmt::format("not a collie flight-recorder dump: {}", e.what()));
  }
  const json* entries = find(j, "entries");
  if (entries == nullptr || !entries->is_array()) bad("entries is not a list");
  // Every object was converted and dropped by the callback; what is left is not an entry.
  if (!entries->empty())
    bad(fmt::format("entries holds {}, not an object", entries->front().dump()));
  check_dump_entries(d);
  return d;
}

}  // namespace

RankDump parse_dump(const std::string& text) {
  return parse(nullptr, &text, text.size(), "flight-recorder dump");
}

RankDump parse_dump_file(const std::string& path) {
  RegularFile f(path, kMaxJsonDumpBytes);
  return parse(&f.stream(), nullptr, f.size(), "dump " + path);
}

namespace {

// A file's first byte, or -1 when it cannot be read or is not a regular file (a FIFO planted
// under a dump's name is never opened for reading in a way that blocks).
int first_byte(const std::filesystem::path& p) {
  try {
    RegularFile f(p.string(), kMaxPickleBytes);
    const int c = f.stream().get();
    return c == std::char_traits<char>::eof() ? -1 : c;
  } catch (const InvalidArgument&) {
    return -1;
  }
}

RankDump parse_torch_dump_file(const std::filesystem::path& p, int rank) {
  RegularFile f(p.string(), kMaxPickleBytes);
  return parse_torch_dump(f.read_all(), rank);
}

}  // namespace

std::vector<RankDump> load_dump_dir(const std::string& dir, std::vector<std::string>& errors) {
  namespace fs = std::filesystem;
  std::vector<RankDump> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw InvalidArgument(fmt::format("'{}' is not a directory (pass COLLIE_FR_DUMP_DIR)", dir));
  }
  std::vector<fs::path> collie_files;
  std::vector<std::pair<fs::path, int>> torch_files;  // with the rank their name carries
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("collie_fr_rank_", 0) == 0 && e.path().extension() == ".json") {
      collie_files.push_back(e.path());
    } else if (name[0] != '.' && e.is_regular_file(ec) && first_byte(e.path()) == 0x80) {
      // A pickle: PyTorch's dump layout, whatever its prefix; the rank ends its name.
      const auto rank = torch_dump_rank(name);
      if (rank) {
        torch_files.emplace_back(e.path(), *rank);
      } else {
        errors.push_back(
            fmt::format("{}: a pickle whose name does not end in its rank", e.path().string()));
      }
    }
  }
  std::sort(collie_files.begin(), collie_files.end());
  std::sort(torch_files.begin(), torch_files.end());
  std::map<int, std::string> seen;  // rank -> file
  auto keep = [&](RankDump d, const fs::path& p) {
    auto [it, fresh] = seen.emplace(d.rank, p.string());
    if (!fresh) {
      throw InvalidArgument(fmt::format("rank {} already has a dump ({})", d.rank, it->second));
    }
    out.push_back(std::move(d));
  };
  for (const auto& p : collie_files) {
    try {
      keep(parse_dump_file(p.string()), p);
    } catch (const std::exception& e) {
      errors.push_back(fmt::format("{}: {}", p.string(), e.what()));
    }
  }
  std::set<int> collie_ranks;
  for (const auto& [r, _] : seen) collie_ranks.insert(r);
  for (const auto& [p, rank] : torch_files) {
    // COLLIE_FR_DUMP_FORMAT=json,torch writes both for a rank: collie's own says more.
    if (collie_ranks.count(rank) != 0) continue;
    try {
      keep(parse_torch_dump_file(p, rank), p);
    } catch (const std::exception& e) {
      errors.push_back(fmt::format("{}: {}", p.string(), e.what()));
    }
  }
  return out;
}

}  // namespace collie
