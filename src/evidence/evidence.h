#pragma once
// The evidence readers: every input an operator holds after an incident, read into one model of
// facts (per rank, host, link or op, with the time the input gives) and typed findings
// (finding.h), each input saying what it contributed. Formats, recognised by their content:
//   ncclras -f json         a status document (NCCL >= 2.28.7) or a `-m` event stream
//   nccl-tests -J JSON      version 3, with -I's per-process times (reports/nccl_tests_json.h)
//   nccl-tests text output  the table nccl-tests (or collie perf) prints
//   collie perf -J          collie.perf.v1 (reports/json_io.h), -I arrival statistics included
//   collie accept -J        collie.accept.v1; collie probe -J (pairwise, stragglers, connectivity)
// Reading is bounded: regular files only, at most ReadLimits::max_bytes, and every unusable input
// is one InvalidArgument line naming the path (at most ~80 characters of the input quoted).
// Joining the facts of several inputs by rank, host and time is the caller's (collie analyze).
// Pure functions over files and values; thread-safe.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "evidence/finding.h"

namespace collie::evidence {

// One thing an input says about one subject.
struct Fact {
  std::string subject;  // "rank", "host", "link", "op" or "job"
  int rank = -1;        // the rank, where the input names one
  std::string group;    // the communicator or group `rank` counts in ("" = the job's world)
  std::string host;     // the host (a name or, from RAS, an address)
  std::string peer;     // a link's other end
  std::string op;       // "all_reduce 1048576 B out", "AllReduce"; "" when not about an op
  std::string name;     // "busbw_gbps", "late_p50_us", "status", "launched", ...
  double value = 0;     // the number ("" text facts keep 0)
  std::string text;     // a word value ("dead", "unresponsive"); "" for numbers
  std::string time;     // when, as the input wrote it; "" when it does not say
};

struct Evidence {
  std::string path;
  std::string format;       // "ncclras-json", "ncclras-events", "nccl-tests-json", ...
  std::string contributed;  // one line: what this input added
  std::vector<Fact> facts;
  std::vector<Finding> findings;
};

struct ReadLimits {
  uint64_t max_bytes = 64ull << 20;  // larger inputs are refused, not truncated
  size_t max_facts = 100000;         // facts past this are dropped (the contributed line says so)
};

// Reads one input, recognising its format. Throws InvalidArgument, one line naming `path`.
Evidence read_evidence(const std::string& path, const ReadLimits& limits = {});

// The same on text already in memory (tests, fuzzing); `path` only names it.
Evidence read_evidence_text(const std::string& path, const std::string& text,
                            const ReadLimits& limits = {});

// Every input in order, then every finding, most confident first. Ends in '\n'.
std::string evidence_text(const std::vector<Evidence>& all);
// {"inputs": [{path, format, contributed, facts: n}], "findings": [...], "facts": [...]}.
nlohmann::json evidence_json(const std::vector<Evidence>& all);
nlohmann::json finding_json(const Finding& f);
nlohmann::json fact_json(const Fact& f);

}  // namespace collie::evidence
