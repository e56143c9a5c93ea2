#pragma once
// The checks of a dump's fields (dump_reader.cpp), written once over any JSON tree: nlohmann's
// (a header, a PyTorch dump converted entry by entry) and simdjson's (collie's JSON dumps, read
// at the speed a folder of 16,384 dumps needs). A tree is seen through two small views:
//   V, a value: is_null, is_bool/boolean, is_int/i64 (fits int64), is_uint/u64 (a non-negative
//     integer), is_number/dbl, is_string/str, text (compact JSON, for messages and sizes);
//   O, an object: std::optional<V> get(const Key& key), nullopt when absent or null.
// Every number is range-checked, every string kept is made printable. Internal to src/debug.
// Thread safety: pure functions.
#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/printable.h"
#include "debug/analyzer.h"

namespace collie::dump_fields {

[[noreturn]] inline void bad(const std::string& what) {
  throw InvalidArgument(fmt::format("invalid flight-recorder dump: {}", what));
}

// "gloo:send 0->1" -> "send".
inline std::string op_of(const std::string& profiling_name) {
  auto colon = profiling_name.find(':');
  std::string op = colon == std::string::npos ? profiling_name : profiling_name.substr(colon + 1);
  auto space = op.find(' ');
  return space == std::string::npos ? op : op.substr(0, space);
}

// An entry's fields as the converter asks for them: one pass over the object puts each known key
// in its slot, so get() is an array lookup.
inline constexpr std::array<std::string_view, 19> kEntryKeys = {"collective_seq_id",
                                                                "duration_ms",
                                                                "failed",
                                                                "input_dtypes",
                                                                "input_sizes",
                                                                "is_p2p",
                                                                "output_dtypes",
                                                                "output_sizes",
                                                                "p2p_seq_id",
                                                                "peer",
                                                                "pg_id",
                                                                "profiling_name",
                                                                "record_id",
                                                                "reduce_op",
                                                                "root",
                                                                "state",
                                                                "time_created_ns",
                                                                "time_discovered_completed_ns",
                                                                "time_discovered_started_ns"};

// The keys' indexes by length (at most 3 keys share one), so a key costs one or two compares;
// a binary search of the sorted keys was a quarter of `collie analyze`'s time.
inline constexpr size_t kMaxEntryKeyChars = 28;
struct KeysByLength {
  std::array<std::array<int8_t, 4>, kMaxEntryKeyChars + 1> index{};
  constexpr KeysByLength() {
    for (auto& row : index) row.fill(-1);
    for (size_t i = 0; i < kEntryKeys.size(); ++i) {
      auto& row = index[kEntryKeys[i].size()];
      size_t j = 0;
      while (row[j] >= 0) ++j;
      row[j] = static_cast<int8_t>(i);
    }
  }
};
inline constexpr KeysByLength kKeysByLength;

constexpr int entry_key(std::string_view k) {
  if (k.size() > kMaxEntryKeyChars) return -1;
  for (const int8_t i : kKeysByLength.index[k.size()]) {
    if (i < 0) return -1;
    if (kEntryKeys[i] == k) return i;
  }
  return -1;
}

// A field's name and, for an entry's fields, its index in kEntryKeys found at compile time
// (entry_field), so a reader with a slot per key looks it up without comparing strings.
struct Key {
  static constexpr int kNotLookedUp = -2;
  const char* name;
  int slot = kNotLookedUp;
  Key(const char* n) : name(n) {}  // NOLINT: implicit by design (header fields)
  constexpr Key(const char* n, int s) : name(n), slot(s) {}
};
consteval Key entry_field(const char* name) {
  const int slot = entry_key(name);
  if (slot < 0) throw "not a key of kEntryKeys";  // a compile error
  return Key(name, slot);
}

// Where a field is, for messages: a prefix ("pg_config[0]: ", "" at the top), or an entry,
// whose "entry <index>: " is written only when something is wrong (read_entry runs per entry).
// REQUIRES: a prefix outlives the call it is passed to.
class Where {
 public:
  Where(const char* prefix) : prefix_(prefix) {}         // NOLINT: implicit by design
  Where(const std::string& prefix) : prefix_(prefix) {}  // NOLINT
  static Where entry(size_t index) {
    Where w("");
    w.entry_ = index;
    return w;
  }
  std::string str() const {
    return entry_ ? fmt::format("entry {}: ", *entry_) : std::string(prefix_);
  }

 private:
  std::string_view prefix_;
  std::optional<size_t> entry_;
};

template <class O>
uint64_t get_u64(const O& o, const Key& key, const Where& where) {
  const auto v = o.get(key);
  if (!v) return 0;
  if (v->is_uint()) return v->u64();
  if (v->is_int()) bad(fmt::format("{}{} {} is negative", where.str(), key.name, v->text()));
  bad(fmt::format("{}{} is {}, not a non-negative integer", where.str(), key.name, v->text()));
}

template <class O>
int64_t get_i64(const O& o, const Key& key, const Where& where) {
  const auto v = o.get(key);
  if (!v) return 0;
  if (v->is_int()) return v->i64();
  if (v->is_uint()) bad(fmt::format("{}{} {} is out of range", where.str(), key.name, v->text()));
  bad(fmt::format("{}{} is {}, not an integer", where.str(), key.name, v->text()));
}

// An integer in [lo, hi], or nullopt (not an integer, or out of range).
template <class V>
std::optional<int64_t> int_in(const V& v, int64_t lo, int64_t hi) {
  if (v.is_int()) {
    const int64_t i = v.i64();
    if (i < lo || i > hi) return std::nullopt;
    return i;
  }
  return std::nullopt;  // not an integer, or above int64's range
}

// A rank: an integer in [lo, kMaxAnalyzeWorld).
template <class V>
int get_rank(const V& v, const std::string& what, int lo) {
  const auto r = int_in(v, lo, kMaxAnalyzeWorld - 1);
  if (!r)
    bad(fmt::format("{} {} is not a rank in {}..{}", what, v.text(), lo, kMaxAnalyzeWorld - 1));
  return static_cast<int>(*r);
}

template <class O>
int get_rank_or(const O& o, const Key& key, int def, int lo, const Where& where) {
  const auto v = o.get(key);
  if (!v) return def;
  if (const auto r = int_in(*v, lo, kMaxAnalyzeWorld - 1)) return static_cast<int>(*r);
  return get_rank(*v, where.str() + key.name, lo);  // throws, naming it
}

template <class O>
bool get_bool(const O& o, const Key& key) {
  const auto v = o.get(key);
  if (!v) return false;
  if (!v->is_bool()) bad(fmt::format("{} is {}, not true/false", key.name, v->text()));
  return v->boolean();
}

template <class O>
std::string get_str(const O& o, const Key& key, const Where& where, bool required) {
  const auto v = o.get(key);
  if (!v) {
    if (required) bad(fmt::format("{}{} is missing", where.str(), key.name));
    return "";
  }
  if (!v->is_string())
    bad(fmt::format("{}{} is {}, not a string", where.str(), key.name, v->text()));
  return printable(v->str());
}

// One entry of a dump (`index` names it in errors).
template <class O>
DumpEntry read_entry(const O& e, size_t index) {
  const Where where = Where::entry(index);
  DumpEntry x;
  x.record_id = get_u64(e, entry_field("record_id"), where);
  x.pg_id = get_str(e, entry_field("pg_id"), where, true);
  x.collective_seq_id = get_u64(e, entry_field("collective_seq_id"), where);
  x.p2p_seq_id = get_u64(e, entry_field("p2p_seq_id"), where);
  x.profiling_name = get_str(e, entry_field("profiling_name"), where, true);
  x.op = op_of(x.profiling_name);
  auto text = [&](const Key& key) {
    const auto v = e.get(key);
    return v ? printable(v->text()) : std::string("[]");
  };
  x.sizes = text(entry_field("input_sizes"));
  x.dtypes = text(entry_field("input_dtypes"));
  x.output_sizes = text(entry_field("output_sizes"));
  x.output_dtypes = text(entry_field("output_dtypes"));
  x.reduce_op = get_str(e, entry_field("reduce_op"), where, false);
  if (const auto d = e.get(entry_field("duration_ms"))) {
    if (!d->is_number() || !(d->dbl() >= 0 && d->dbl() < 1e12))
      bad(fmt::format("{}duration_ms {} is not a duration in ms", where.str(),
                      printable(d->text())));
    x.duration_ms = d->dbl();
  }
  x.state = get_str(e, entry_field("state"), where, true);
  x.failed = get_bool(e, entry_field("failed"));
  x.is_p2p = get_bool(e, entry_field("is_p2p"));
  x.root = get_rank_or(e, entry_field("root"), -1, -1, where);
  x.peer = get_rank_or(e, entry_field("peer"), -1, -1, where);
  // PyTorch and collie write null for "not yet" (get() reads null as absent: 0).
  x.time_created_ns = get_i64(e, entry_field("time_created_ns"), where);
  x.time_started_ns = get_i64(e, entry_field("time_discovered_started_ns"), where);
  x.time_completed_ns = get_i64(e, entry_field("time_discovered_completed_ns"), where);
  return x;
}

}  // namespace collie::dump_fields
