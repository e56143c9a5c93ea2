#include "perf/options.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "core/env.h"
#include "core/error.h"
#include "core/printable.h"
#include "core/size.h"
#include "perf/collective.h"

namespace collie::perf {
namespace {

int64_t parse_int(const std::string& s, const char* var) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    throw InvalidArgument(std::string(var) + "=" + quote(s) + " is not an integer");
  return v;
}

// "a:b" -> (a, b); "b" -> (-1, b) when allow_plain.
std::pair<int64_t, int64_t> parse_pair(const std::string& s, const char* var, bool allow_plain) {
  const auto colon = s.find(':');
  if (colon == std::string::npos) {
    if (!allow_plain)
      throw InvalidArgument(std::string(var) + "=" + quote(s) + ": expected rank:value");
    return {-1, parse_int(s, var)};
  }
  return {parse_int(s.substr(0, colon), var), parse_int(s.substr(colon + 1), var)};
}

// The names people bring from elsewhere for a perf collective: torch's (and `collie info`'s)
// all_to_all, and nccl-tests' binary names (all_reduce_perf, alltoall_perf, ...).
std::string perf_name(const std::string& word) {
  std::string name = word;
  if (name.size() > 5 && name.ends_with("_perf")) name.resize(name.size() - 5);
  if (name == "all_to_all") return "alltoall";
  return name;
}

}  // namespace

constexpr const char* kHookVars[] = {"COLLIE_PERF_TEST_CORRUPT", "COLLIE_PERF_TEST_DELAY_US",
                                     "COLLIE_PERF_TEST_WORK", "COLLIE_PERF_TEST_STALL"};
constexpr const char* kEnableVar = "COLLIE_ENABLE_TEST_HOOKS";

TestHooks TestHooks::from_env(const Env& env) {
  TestHooks h;
  for (const char* var : kHookVars) {
    auto v = env.get(var);
    if (!v || v->empty()) continue;
    if (env.get(kEnableVar).value_or("") != "1")
      throw InvalidArgument(std::string(var) + " is a test-only hook that changes what is " +
                            "measured; unset it, or set " + kEnableVar + "=1 in a test");
    h.active.push_back(std::string(var) + "=" + *v);
  }
  if (auto v = env.get("COLLIE_PERF_TEST_CORRUPT"); v && !v->empty()) {
    auto [r, off] = parse_pair(*v, "COLLIE_PERF_TEST_CORRUPT", false);
    h.corrupt_rank = static_cast<int>(r);
    h.corrupt_offset = off;
  }
  if (auto v = env.get("COLLIE_PERF_TEST_DELAY_US"); v && !v->empty()) {
    auto [r, us] = parse_pair(*v, "COLLIE_PERF_TEST_DELAY_US", true);
    h.delay_rank = static_cast<int>(r);
    h.delay_us = us;
  }
  if (auto v = env.get("COLLIE_PERF_TEST_WORK"); v && !v->empty()) {
    h.work_units = parse_int(*v, "COLLIE_PERF_TEST_WORK");
    if (h.work_units < 0 || h.work_units > 1000000)
      throw InvalidArgument("COLLIE_PERF_TEST_WORK='" + *v + "': expected units in 0..1000000");
  }
  if (auto v = env.get("COLLIE_PERF_TEST_STALL"); v && !v->empty()) {
    const auto colon = v->find(':');
    if (colon == std::string::npos || colon + 1 == v->size())
      throw InvalidArgument("COLLIE_PERF_TEST_STALL=" + quote(*v) + ": expected rank:path");
    h.stall_rank = static_cast<int>(parse_int(v->substr(0, colon), "COLLIE_PERF_TEST_STALL"));
    h.stall_file = v->substr(colon + 1);
  }
  return h;
}

std::string TestHooks::warning() const {
  if (active.empty()) return "";
  std::string line = "WARNING: test hooks active (";
  for (size_t i = 0; i < active.size(); ++i) line += (i ? ", " : "") + active[i];
  return line + "): these results are not a measurement";
}

int iters_for(const PerfOptions& o, int64_t bytes) {
  if (!o.scale_iters || bytes <= kItersScaleBytes) return o.iters;
  const int64_t scaled = kItersScaleBytes * o.iters / bytes;
  return static_cast<int>(std::clamp<int64_t>(scaled, 2, o.iters));
}

std::vector<int64_t> sweep_sizes(const PerfOptions& o) {
  std::vector<int64_t> out;
  for (int64_t s = o.min_bytes; s <= o.max_bytes;) {
    out.push_back(s);
    // A factor that would take the size past -e ends the sweep (and never overflows).
    if (o.step_factor > 1 && s > o.max_bytes / o.step_factor) break;
    const int64_t next = o.step_factor > 1 ? s * o.step_factor : s + o.step_bytes;
    if (next <= s) break;  // -b 0 with a factor, or a zero step: one size only
    s = next;
  }
  return out;
}

std::vector<std::string> parse_collectives(const std::vector<std::string>& words, bool allow_all,
                                           const std::string& setting, bool* asked_all) {
  std::vector<std::string> out;
  if (asked_all != nullptr) *asked_all = false;
  for (const std::string& word : words) {
    size_t start = 0;
    while (start <= word.size()) {
      const size_t comma = std::min(word.find(',', start), word.size());
      const std::string name = perf_name(word.substr(start, comma - start));
      start = comma + 1;
      if (allow_all && name == "all") {
        if (asked_all != nullptr) *asked_all = true;
        for (const auto* d : all_collectives()) out.push_back(d->name);
      } else if (find_collective(name) != nullptr) {
        out.push_back(name);
      } else {
        std::string known;
        for (const auto* d : all_collectives()) known += (known.empty() ? "" : ", ") + d->name;
        throw SettingError(fmt::format("unknown collective {} (known: {}{}; all_to_all and "
                                       "nccl-tests' names such as all_reduce_perf work too)",
                                       quote(name), known, allow_all ? ", all" : ""),
                           setting);
      }
    }
  }
  if (out.empty()) out = {"all_reduce"};
  return out;
}

std::vector<ReduceOp> parse_ops(const std::string& word, bool allow_all,
                                const std::string& setting) {
  if (allow_all && word == "all")
    return {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg};
  const auto op = parse_reduce_op(word);
  if (!op || *op == ReduceOp::PreMulSum)
    throw SettingError(fmt::format("unknown op {} (use sum, prod, max, min{} avg{})", quote(word),
                                   allow_all ? "," : " or", allow_all ? " or all" : ""),
                       setting);
  return {*op};
}

std::vector<DType> parse_dtypes(const std::string& word, bool allow_all,
                                const std::string& setting) {
  if (allow_all && word == "all") return {kAllDTypes.begin(), kAllDTypes.end()};
  const auto d = parse_dtype(word);
  if (!d)
    throw SettingError(fmt::format("unknown dtype {} (use int8 uint8 int32 uint32 int64 uint64 "
                                   "half float double bfloat16{})",
                                   quote(word), allow_all ? " or all" : ""),
                       setting);
  return {*d};
}

void check_sweep(const PerfOptions& o, const SweepNames& n) {
  if (o.min_bytes > o.max_bytes)
    throw SettingError(fmt::format("{} {} is larger than {} {}", n.min, size_label(o.min_bytes),
                                   n.max, size_label(o.max_bytes)),
                       n.min);
  if (o.step_factor < 1)
    throw SettingError(
        fmt::format("{} must be >= 1 (above 1 multiplies each size; 1 adds {})", n.factor, n.step),
        n.factor);
  if (o.step_factor == 1 && o.step_bytes <= 0)
    throw SettingError(fmt::format("{} must be > 0 when {} is 1", n.step, n.factor), n.step);
}

}  // namespace collie::perf
