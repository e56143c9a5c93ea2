#pragma once
// Environment seam: configuration is read through Env so tests can supply a map instead of
// mutating the process environment. ProcessEnv reads getenv (thread-safe as long as nobody
// calls setenv concurrently); MapEnv is immutable after construction.
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/export.h"

namespace collie {

class COLLIE_API Env {
 public:
  virtual ~Env() = default;
  virtual std::optional<std::string> get(std::string_view name) const = 0;
  // First variable of `names` that is set and non-empty.
  std::optional<std::string> first_of(std::initializer_list<std::string_view> names) const;
  // Parses an integer; throws InvalidArgument naming the variable if it is not one.
  std::optional<long long> get_int(std::string_view name) const;
  // The same, and in [lo, hi]: else InvalidArgument "NAME=V is not in LO..HI" + `what` (what the
  // number means or costs), so a value is refused by name before anything is sized from it.
  std::optional<long long> get_int_in(std::string_view name, long long lo, long long hi,
                                      std::string_view what = "") const;
  static const Env& process();
};

class COLLIE_API MapEnv : public Env {
 public:
  using Map = std::map<std::string, std::string>;
  explicit MapEnv(Map vars) : vars_(std::move(vars)) {}
  std::optional<std::string> get(std::string_view name) const override;

 private:
  std::map<std::string, std::string> vars_;
};

// Parses durations such as "30", "30s", "500ms", "2m", "1h" (bare numbers are seconds).
// Throws InvalidArgument on anything else.
COLLIE_API std::chrono::milliseconds parse_duration(std::string_view s);

}  // namespace collie
