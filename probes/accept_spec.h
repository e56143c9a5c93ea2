#pragma once
// Acceptance spec (`collie accept --spec SPEC.yaml|SPEC.json`): which probes and perf sweeps to
// run and the rules their results must meet. Both formats become the same JSON model, validated
// by one parser that checks everything up front (unknown keys, wrong types, unknown probes or
// collectives, rule sizes a sweep does not measure) so a bad spec fails before any rank starts.
// See docs/acceptance.md.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/printable.h"
#include "core/timeout.h"

namespace collie::probes {

// The spec is unusable (exit 2); the message names the check and key. `pointer` is the JSON
// pointer of the offending value ("/checks/1/rules/max_slow_hosts"; "" = the spec as a whole),
// which load_spec turns into a line number for YAML files.
class SpecError : public std::runtime_error {
 public:
  explicit SpecError(const std::string& what, std::string pointer = "")
      : std::runtime_error(what), pointer_(std::move(pointer)) {}
  const std::string& pointer() const { return pointer_; }

 private:
  std::string pointer_;
};

// A spec value as JSON text for a SpecError message. YAML scalars are not checked for UTF-8, and
// json::dump() throws on invalid UTF-8 (a type_error, not a SpecError: `collie accept` aborted);
// here such bytes show as U+FFFD.
inline std::string spec_value_text(const nlohmann::json& v) {
  const std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s.size() <= kQuoteChars ? s : quote(s);  // a long value is cut (core/printable.h)
}

struct CheckSpec {
  std::string name;       // unique; defaults to the probe / collective name
  std::string kind;       // connectivity | pairwise | stragglers | env | perf
  nlohmann::json params;  // probe parameters (validated), e.g. {"bytes": 4194304}
  nlohmann::json rules;   // rule name -> threshold (validated)
};

// A node type's absolute limits (`profiles:` in the spec). A host takes the first profile whose
// `hosts` glob (fnmatch) matches its hostname; 0 / empty = no limit.
struct NodeProfile {
  std::string name;
  std::string hosts = "*";
  double min_link_gbps = 0;                  // pairwise: floor for every link of the host
  double max_latency_us = 0;                 // pairwise: one-way latency ceiling
  std::map<int64_t, double> min_busbw_gbps;  // perf: busbw floor per size (bytes)
  std::map<int64_t, double> max_time_us;     // perf: time ceiling per size (bytes)
};

struct AcceptSpec {
  std::string name = "acceptance";
  std::string backend = "gloo";
  Millis timeout{std::chrono::seconds(10)};
  std::string baseline;  // path of an earlier `collie accept` JSON report ("" = none)
  std::vector<CheckSpec> checks;
  std::vector<NodeProfile> profiles;
  // The profile of `host` (first match), or nullptr.
  const NodeProfile* profile_for(const std::string& host) const;
};

// Throws SpecError.
AcceptSpec parse_spec(const nlohmann::json& j);
// Reads a YAML (.yaml, .yml) or JSON (anything else) spec. Throws SpecError; for YAML the message
// starts with "PATH:LINE: " when the offending key has a line.
AcceptSpec load_spec(const std::string& path);

// "8", "64K", "4M", "1G" (binary units) or a JSON number. Throws SpecError naming `what`.
int64_t parse_bytes(const nlohmann::json& v, const std::string& what);

}  // namespace collie::probes
