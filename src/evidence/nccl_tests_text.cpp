#include "evidence/nccl_tests_text.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/printable.h"

namespace collie::evidence {
namespace {

std::vector<std::string> tokens(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

std::optional<double> number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<int64_t> integer(const std::string& s) {
  const auto v = number(s);
  if (!v || *v != std::floor(*v) || std::fabs(*v) > 9.0e15) return std::nullopt;
  return static_cast<int64_t>(*v);
}

std::string collective_of(std::string name) {
  if (name.ends_with("_mpi")) name.resize(name.size() - 4);
  if (name.ends_with("_perf")) name.resize(name.size() - 5);
  return name;
}

// "#  Rank  3 Group  0 Pid  12345 on      host1 device  0 [0000:0f:00] NVIDIA ...": rank, host.
bool rank_line(const std::vector<std::string>& t, int* rank, std::string* host) {
  if (t.size() < 8 || t[0] != "#" || t[1] != "Rank") return false;
  const auto r = integer(t[2]);
  if (!r || *r < 0 || *r > (1 << 24)) return false;
  for (size_t i = 3; i + 1 < t.size(); ++i)
    if (t[i] == "on") {
      *rank = static_cast<int>(*r);
      *host = t[i + 1];
      return true;
    }
  return false;
}

// One placement's cells at t[at..]: time, algbw, busbw, #wrong. nullopt: not a row.
std::optional<std::optional<reports::ResultRow>> placement(const std::vector<std::string>& t,
                                                           size_t at, reports::ResultRow r) {
  if (t[at] == "N/A" && t[at + 1] == "N/A" && t[at + 2] == "N/A")
    return std::optional<reports::ResultRow>{};  // not run
  const auto time = number(t[at]), alg = number(t[at + 1]), bus = number(t[at + 2]);
  if (!time || !alg || !bus) return std::nullopt;
  r.time_us = *time;
  r.algbw_gbps = *alg;
  r.busbw_gbps = *bus;
  if (t[at + 3] == "N/A") {
    r.wrong = -1;
  } else {
    const auto w = integer(t[at + 3]);
    if (!w || *w < 0) return std::nullopt;
    r.wrong = *w;
  }
  return std::optional<reports::ResultRow>{r};
}

}  // namespace

bool looks_like_nccl_tests_text(const std::string& text) {
  return text.find("# Collective test starting:") != std::string::npos ||
         text.find("# nThread ") != std::string::npos;
}

reports::RunResult parse_nccl_tests_text(const std::string& text) {
  reports::RunResult run;
  run.meta.version = "nccl-tests text";
  std::string collective = "unknown";
  bool per_iter = false;
  std::string first_bad;
  std::vector<std::string> hosts;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const std::vector<std::string> t = tokens(line);
    if (t.empty()) continue;
    if (t[0] == "#" || t[0][0] == '#') {
      int rank = -1;
      std::string host;
      if (line.find("# Collective test starting:") == 0 && t.size() >= 5) {
        collective = collective_of(t[4]);
      } else if (rank_line(t, &rank, &host)) {
        if (static_cast<size_t>(rank) >= hosts.size()) hosts.resize(rank + 1, "?");
        hosts[rank] = host;
      } else if (line.find("i_min") != std::string::npos) {
        per_iter = true;
      } else if (t.size() >= 6 && t[1] == "collie" && t[2] == "version") {
        run.meta.version = "collie " + t[3];
        if (t.size() >= 6 && t[4] == "backend") run.meta.backend = t[5];
      }
      continue;
    }
    const size_t cells = per_iter ? 8 : 4;
    const auto size = integer(t[0]);
    if (!size) continue;  // not a row: another program's line
    if (t.size() < 5 + 2 * cells) {
      if (first_bad.empty()) first_bad = line;
      continue;
    }
    const auto count = integer(t[1]), root = integer(t[4]);
    if (!count || !root || *size < 0 || *count < 0 || *root < -1 || *root > (1 << 24)) {
      if (first_bad.empty()) first_bad = line;
      continue;
    }
    reports::ResultRow base;
    base.collective = collective;
    base.size_bytes = *size;
    base.count = *count;
    base.dtype = t[2];
    base.redop = t[3];
    base.root = static_cast<int>(*root);
    reports::ResultRow out = base, in_place = base;
    out.placement = "out";
    in_place.placement = "in";
    const auto o = placement(t, 5, out), i = placement(t, 5 + cells, in_place);
    if (!o || !i) {
      if (first_bad.empty()) first_bad = line;
      continue;
    }
    if (*o) run.rows.push_back(**o);
    if (*i) run.rows.push_back(**i);
  }
  if (run.rows.empty())
    throw InvalidArgument(first_bad.empty()
                              ? std::string("nccl-tests text output with no result rows (did the "
                                            "run end before its first size?)")
                              : "nccl-tests text output, but no row could be read; the first "
                                "unreadable one: '" +
                                    printable(first_bad.substr(0, 80)) + "'");
  run.meta.hosts = hosts;
  run.meta.world_size = static_cast<int>(hosts.size());
  run.summary = reports::summarize(run.rows, run.meta.world_size);
  return run;
}

}  // namespace collie::evidence
