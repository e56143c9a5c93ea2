#include "core/env.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "core/printable.h"

namespace collie {
namespace {

class ProcessEnv : public Env {
 public:
  std::optional<std::string> get(std::string_view name) const override {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  }
};

}  // namespace

std::optional<std::string> Env::first_of(std::initializer_list<std::string_view> names) const {
  for (auto n : names) {
    auto v = get(n);
    if (v && !v->empty()) return v;
  }
  return std::nullopt;
}

std::optional<long long> Env::get_int(std::string_view name) const {
  auto v = get(name);
  if (!v || v->empty()) return std::nullopt;
  long long out = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || p != v->data() + v->size()) {
    throw InvalidArgument(std::string(name) + "=" + quote(*v) + " is not an integer");
  }
  return out;
}

std::optional<long long> Env::get_int_in(std::string_view name, long long lo, long long hi,
                                         std::string_view what) const {
  const auto v = get_int(name);
  if (v && (*v < lo || *v > hi)) {
    throw InvalidArgument(std::string(name) + "=" + std::to_string(*v) + " is not in " +
                          std::to_string(lo) + ".." + std::to_string(hi) + std::string(what));
  }
  return v;
}

const Env& Env::process() {
  static ProcessEnv env;
  return env;
}

std::optional<std::string> MapEnv::get(std::string_view name) const {
  auto it = vars_.find(std::string(name));
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

std::chrono::milliseconds parse_duration(std::string_view s) {
  double value = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  // NaN and infinity parse as numbers; neither is a duration.
  if (ec != std::errc() || !std::isfinite(value) || value < 0) {
    throw InvalidArgument(quote(s) + " is not a duration (try 30s, 500ms, 10m)");
  }
  std::string_view unit(p, s.data() + s.size() - p);
  double ms;
  if (unit.empty() || unit == "s") {
    ms = value * 1000;
  } else if (unit == "ms") {
    ms = value;
  } else if (unit == "m" || unit == "min") {
    ms = value * 60'000;
  } else if (unit == "h") {
    ms = value * 3'600'000;
  } else {
    throw InvalidArgument(quote(s) + " has an unknown unit (use ms, s, m or h)");
  }
  if (ms > 1e15) {  // ~31,000 years: past it the conversion below would overflow
    throw InvalidArgument(quote(s) + " is longer than any deadline collie takes");
  }
  return std::chrono::milliseconds(static_cast<long long>(ms));
}

}  // namespace collie
