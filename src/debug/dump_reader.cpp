// Reads flight-recorder dumps (parse_dump, load_dump_dir in analyzer.h) for the analyzer.
// A dump is input from a file or from a remote rank, so nothing in it is trusted: every number
// is range-checked (a seq id is a non-negative integer, a rank is in [0, kMaxAnalyzeWorld)),
// nesting is limited, and entries are converted one at a time while the JSON is parsed (the
// parse callback drops each entry's JSON tree as soon as it is converted), so memory follows
// the number of entries, not the size of a whole JSON document.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "core/error.h"
#include "debug/analyzer.h"
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
  if (v->is_number_integer()) bad(fmt::format("{}{} {} is negative", where, key, v->dump()));
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
  return v->get<std::string>();
}

DumpEntry to_entry(const json& e, size_t index) {
  const std::string where = fmt::format("entry {}: ", index);
  if (!e.is_object()) bad(fmt::format("{}not an object", where));
  DumpEntry x;
  x.record_id = get_u64(e, "record_id", where);
  x.pg_id = get_str(e, "pg_id", where, true);
  x.collective_seq_id = get_u64(e, "collective_seq_id", where);
  x.p2p_seq_id = get_u64(e, "p2p_seq_id", where);
  x.profiling_name = get_str(e, "profiling_name", where, true);
  x.op = op_of(x.profiling_name);
  x.sizes = e.value("input_sizes", json::array()).dump();
  x.dtypes = e.value("input_dtypes", json::array()).dump();
  x.output_sizes = e.value("output_sizes", json::array()).dump();
  x.output_dtypes = e.value("output_dtypes", json::array()).dump();
  x.reduce_op = get_str(e, "reduce_op", where, false);
  if (const json* d = find(e, "duration_ms"); d != nullptr) {
    if (!d->is_number() || !(d->get<double>() >= 0 && d->get<double>() < 1e12))
      bad(fmt::format("{}duration_ms {} is not a duration in ms", where, d->dump()));
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

// Parses with a callback: depth is limited, and each element of the top-level "entries" array
// becomes a DumpEntry and is dropped from the tree as soon as its object ends.
RankDump parse(std::istream* in, const std::string* text) {
  RankDump d;
  std::string top_key;
  size_t index = 0;
  auto cb = [&](int depth, json::parse_event_t event, json& parsed) -> bool {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxDepth) bad(fmt::format("nested deeper than {} levels", kMaxDepth));
        return true;
      case json::parse_event_t::key:
        if (depth == 1) top_key = parsed.get<std::string>();
        return true;
      case json::parse_event_t::object_end:
        if (depth == 2 && top_key == "entries") {
          d.entries.push_back(to_entry(parsed, index++));
          return false;
        }
        return true;
      default:
        return true;
    }
  };
  json j;
  try {
    j = in != nullptr ? json::parse(*in, cb) : json::parse(*text, cb);
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
    const json& config = j.at("pg_config");
    const json* status = find(j, "pg_status");
    for (const auto& [id, c] : config.items()) {
      const std::string where = fmt::format("pg_config[{}]: ", id);
      RankDump::Group g;
      g.desc = get_str(c, "desc", where, false);
      const json* ranks = find(c, "ranks");
      if (ranks == nullptr || !ranks->is_array()) bad(where + "ranks is not a list");
      g.ranks.reserve(ranks->size());
      for (const json& r : *ranks) g.ranks.push_back(get_rank(r, where + "rank", 0));
      if (status != nullptr) {
        if (auto st = status->find(id); st != status->end()) {
          const std::string sw = fmt::format("pg_status[{}]: ", id);
          g.last_enqueued = get_u64(*st, "last_enqueued_collective", sw);
          g.last_started = get_u64(*st, "last_started_collective", sw);
          g.last_completed = get_u64(*st, "last_completed_collective", sw);
        }
      }
      d.groups[id] = std::move(g);
    }
  } catch (const json::exception& e) {
    throw InvalidArgument(fmt::format("not a collie flight-recorder dump: {}", e.what()));
  }
  const json* entries = find(j, "entries");
  if (entries == nullptr || !entries->is_array()) bad("entries is not a list");
  // Every object was converted and dropped by the callback; what is left is not an entry.
  if (!entries->empty())
    bad(fmt::format("entries holds {}, not an object", entries->front().dump()));
  for (size_t i = 0; i < d.entries.size(); ++i) {
    if (d.groups.count(d.entries[i].pg_id) == 0) {
      bad(fmt::format("entry {}: group '{}' is not in pg_config", i, d.entries[i].pg_id));
    }
  }
  return d;
}

}  // namespace

RankDump parse_dump(const std::string& text) { return parse(nullptr, &text); }

RankDump parse_dump_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InvalidArgument(fmt::format("cannot open {}", path));
  return parse(&f, nullptr);
}

namespace {

// A file's first byte, or -1 when it cannot be read.
int first_byte(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  char c = 0;
  return f.get(c) ? static_cast<unsigned char>(c) : -1;
}

RankDump parse_torch_dump_file(const std::filesystem::path& p, int rank) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(p, ec);
  if (ec || size > kMaxPickleBytes) {
    throw InvalidArgument(
        fmt::format("larger than the {} bytes a pickle may have", kMaxPickleBytes));
  }
  std::ifstream f(p, std::ios::binary);
  std::string bytes(size, '\0');
  if (!f.read(bytes.data(), static_cast<std::streamsize>(size))) {
    throw InvalidArgument(fmt::format("cannot read {}", p.string()));
  }
  return parse_torch_dump(bytes, rank);
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
