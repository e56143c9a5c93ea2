// What the analysis says, as text and JSON, and how sets of ranks and hosts are named in it:
// ranges ("ranks 4100-4131") and Slurm hostlists ("on hosts node[517-520]"), so a verdict about
// 16,384 ranks is still one line.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "comm/rendezvous.h"
#include "core/printable.h"
#include "debug/analyzer_parts.h"
#include "discovery/hostlist.h"

namespace collie {
namespace {

using nlohmann::json;

// Lists longer than this are cut (capped_ranks) or counted (set_text).
constexpr size_t kMaxListChars = 200;
constexpr size_t kContextListChars = 64;

std::string cap(std::string s) {
  if (s.size() <= kMaxListChars) return s;
  s.resize(s.rfind(',', kMaxListChars));
  return s + ", ...";
}

}  // namespace

std::string count_text(size_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string capped_ranks(const std::vector<int>& r) { return cap(format_ranks(r)); }

std::string rank_word(const std::vector<int>& r) {
  const std::string full = format_ranks(r);
  const std::string list = cap(full);
  return fmt::format(
      "{} {}{}", r.size() == 1 ? "rank" : "ranks", list,
      list.size() < full.size() ? fmt::format(" ({} ranks)", count_text(r.size())) : "");
}

std::string set_text(const std::vector<int>& r) {
  const std::string list = format_ranks(r);
  if (list.size() <= kContextListChars)
    return fmt::format("{} {}", r.size() == 1 ? "rank" : "ranks", list);
  return fmt::format("{} ranks", count_text(r.size()));
}

std::string Analysis::host_of(int rank) const {
  if (rank < 0 || static_cast<size_t>(rank) >= rank_host.size() || rank_host[rank] < 0) return "";
  return host_names[rank_host[rank]];
}

std::string Analysis::hosts_of(const std::vector<int>& ranks) const {
  std::vector<bool> seen(host_names.size(), false);
  std::vector<std::string> names;
  for (int r : ranks) {
    if (r < 0 || static_cast<size_t>(r) >= rank_host.size() || rank_host[r] < 0) continue;
    if (!seen[rank_host[r]]) {
      seen[rank_host[r]] = true;
      names.push_back(host_names[rank_host[r]]);
    }
  }
  return compress_hostlist(std::move(names));
}

namespace {

// " on host node7" / " on hosts node[517-520]"; "" when no host is known.
std::string on_hosts(const Analysis& a, const std::vector<int>& r) {
  const std::string hosts = a.hosts_of(r);
  if (hosts.empty()) return "";
  const bool one = hosts.find_first_of("[,") == std::string::npos;
  return fmt::format(" on host{} {}", one ? "" : "s", cap(hosts));
}

}  // namespace

std::string who_text(const Analysis& a, const std::vector<int>& r) {
  return rank_word(r) + on_hosts(a, r);
}

std::string host_note(const Analysis& a, const std::vector<int>& r) {
  const std::string where = on_hosts(a, r);
  if (where.empty()) return "";
  return fmt::format("; {}{}", r.size() == 1 ? "it is" : "they are", where);
}

std::vector<int> Analysis::culprits() const {
  std::set<int> s;
  for (const auto& f : findings) s.insert(f.culprits.begin(), f.culprits.end());
  return {s.begin(), s.end()};
}

namespace {

// Severity of what a finding says about one of its ranks (0 = only a note).
int severity(const Finding& f, int rank, const char** state) {
  const bool culprit = std::binary_search(f.culprits.begin(), f.culprits.end(), rank);
  if (f.kind == "UNREACHABLE" || f.kind == "MISSING_DUMP") {
    *state = "unreachable";
    return 4;
  }
  if (culprit && f.kind == "NOT_ALL_JOINED") {
    *state = "straggler";
    return 2;
  }
  if (culprit) {
    *state = "culprit";
    return 3;
  }
  if (f.kind == "STUCK") {
    *state = "stalled";
    return 1;
  }
  return 0;
}

constexpr const char* kStates[] = {"ok", "stalled", "straggler", "culprit", "unreachable"};

// Each rank's worst severity over the findings.
std::vector<uint8_t> worst_by_rank(const Analysis& a) {
  std::vector<uint8_t> worst(std::max(a.world_size, 0), 0);
  for (const Finding& f : a.findings) {
    for (int r : f.ranks) {
      if (r < 0 || r >= static_cast<int>(worst.size())) continue;
      const char* state = "ok";
      worst[r] = std::max<uint8_t>(worst[r], severity(f, r, &state));
    }
  }
  return worst;
}

}  // namespace

std::vector<RankVerdict> Analysis::verdicts() const {
  std::vector<RankVerdict> out(std::max(world_size, 0));
  std::vector<int> worst(out.size(), 0);
  for (size_t r = 0; r < out.size(); ++r) {
    out[r].rank = static_cast<int>(r);
    out[r].state = "ok";
  }
  for (const Finding& f : findings) {
    for (int r : f.ranks) {
      if (r < 0 || r >= static_cast<int>(out.size())) continue;
      const char* state = "ok";
      const int sev = severity(f, r, &state);
      out[r].reasons.push_back(f.message);
      if (sev > worst[r]) {
        worst[r] = sev;
        out[r].state = state;
      }
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::vector<int>>> Analysis::states() const {
  const std::vector<uint8_t> worst = worst_by_rank(*this);
  std::vector<std::pair<std::string, std::vector<int>>> out;
  for (int sev = 4; sev >= 1; --sev) {
    std::vector<int> ranks;
    for (size_t r = 0; r < worst.size(); ++r) {
      if (worst[r] == sev) ranks.push_back(static_cast<int>(r));
    }
    if (!ranks.empty()) out.emplace_back(kStates[sev], std::move(ranks));
  }
  return out;
}

std::string Analysis::summary() const {
  if (findings.empty()) {
    return live ? fmt::format("all {} ranks in step", world_size)
                : "no problem found: every rank agrees on every recorded op";
  }
  size_t bad = 0;
  for (const auto& [state, ranks] : states()) bad += ranks.size();
  const std::vector<int> c = culprits();
  std::string s = bad == 0 ? "no rank needs attention (evidence notes only)"
                           : fmt::format("{} of {} ranks need attention", bad, world_size);
  if (!c.empty()) s += fmt::format("; culprit {}", who_text(*this, c));
  return s;
}

std::string to_text(const Analysis& a) {
  std::string out =
      a.live
          ? fmt::format("collie analyze --live: {} of {} ranks answered ({})\n",
                        a.ranks_with_dumps.size(), a.world_size, capped_ranks(a.ranks_with_dumps))
          : fmt::format("collie analyze: {} of {} ranks left dumps ({})\n",
                        a.ranks_with_dumps.size(), a.world_size, capped_ranks(a.ranks_with_dumps));
  for (const std::string& n : a.notes) out += "Note: " + n + "\n";
  if (a.findings.empty()) {
    return out + (a.live ? fmt::format("No problem found: all {} ranks in step.\n", a.world_size)
                         : "No problem found: every rank agrees on every recorded op.\n");
  }
  std::string pg = "-";
  for (const Finding& f : a.findings) {
    if (f.pg_id != pg) {
      pg = f.pg_id;
      out += pg.empty() ? "Evidence:\n" : fmt::format("Group {}:\n", pg);
    }
    out += fmt::format("- {}\n", f.message);
  }
  const auto c = a.culprits();
  out += c.empty() ? "No culprit rank identified.\n"
                   : fmt::format("Culprit {}: {}{}\n", c.size() == 1 ? "rank" : "ranks",
                                 capped_ranks(c), on_hosts(a, c));
  // Names from dumps were made printable when read; this covers text from elsewhere (a rank's
  // error, a store's address) that reached a finding.
  return printable_lines(out);
}

nlohmann::json to_json_value(const Analysis& a) {
  json j;
  j["schema"] = "collie.analyze.v2";
  j["world_size"] = a.world_size;
  j["live"] = a.live;
  j["stall_after_s"] = a.stall_after_s;
  j["dump_spread_ms"] = a.dump_spread_ms < 0 ? json(nullptr) : json(a.dump_spread_ms);
  j["notes"] = a.notes;
  j["ranks_with_dumps"] = rank_ranges(a.ranks_with_dumps);
  j["dumps"] = a.ranks_with_dumps.size();
  // Ranks that did not answer, those with the same reason together.
  std::map<std::string, std::vector<int>> why;
  for (const UnreachableRank& u : a.unreachable) why[u.why].push_back(u.rank);
  j["unreachable"] = json::array();
  for (auto& [text, ranks] : why) {
    std::sort(ranks.begin(), ranks.end());
    j["unreachable"].push_back({{"ranks", rank_ranges(ranks)}, {"why", text}});
  }
  const std::vector<int> c = a.culprits();
  j["culprits"] = rank_ranges(c);
  j["culprit_hosts"] = a.hosts_of(c);
  j["summary"] = a.summary();
  j["findings"] = json::array();
  for (const Finding& f : a.findings) {
    j["findings"].push_back({{"pg_id", f.pg_id},
                             {"kind", f.kind},
                             {"culprits", rank_ranges(f.culprits)},
                             {"ranks", rank_ranges(f.ranks)},
                             {"rank_count", f.ranks.size()},
                             {"hosts", a.hosts_of(f.ranks)},
                             {"seq", f.seq},
                             {"message", f.message}});
  }
  j["states"] = json::array();
  for (const auto& [state, ranks] : a.states()) {
    j["states"].push_back({{"state", state},
                           {"ranks", rank_ranges(ranks)},
                           {"count", ranks.size()},
                           {"hosts", a.hosts_of(ranks)}});
  }
  return j;
}

std::string to_json(const Analysis& a) { return to_json_value(a).dump(2); }

}  // namespace collie
