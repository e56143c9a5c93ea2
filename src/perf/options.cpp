#include "perf/options.h"

#include <algorithm>
#include <charconv>

#include "core/env.h"
#include "core/error.h"

namespace collie::perf {
namespace {

int64_t parse_int(const std::string& s, const char* var) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    throw InvalidArgument(std::string(var) + "='" + s + "' is not an integer");
  return v;
}

// "a:b" -> (a, b); "b" -> (-1, b) when allow_plain.
std::pair<int64_t, int64_t> parse_pair(const std::string& s, const char* var, bool allow_plain) {
  const auto colon = s.find(':');
  if (colon == std::string::npos) {
    if (!allow_plain) throw InvalidArgument(std::string(var) + "='" + s + "': expected rank:value");
    return {-1, parse_int(s, var)};
  }
  return {parse_int(s.substr(0, colon), var), parse_int(s.substr(colon + 1), var)};
}

}  // namespace

constexpr const char* kHookVars[] = {"COLLIE_PERF_TEST_CORRUPT", "COLLIE_PERF_TEST_DELAY_US",
                                     "COLLIE_PERF_TEST_STALL"};
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
  if (auto v = env.get("COLLIE_PERF_TEST_STALL"); v && !v->empty()) {
    const auto colon = v->find(':');
    if (colon == std::string::npos || colon + 1 == v->size())
      throw InvalidArgument("COLLIE_PERF_TEST_STALL='" + *v + "': expected rank:path");
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
    const int64_t next = o.step_factor > 1 ? s * o.step_factor : s + o.step_bytes;
    if (next <= s) break;  // -b 0 with a factor, or a zero step: one size only
    s = next;
  }
  return out;
}

}  // namespace collie::perf
