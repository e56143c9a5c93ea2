// The analyzer's job-wide checks: which world the dumps describe, when they were taken, which
// ranks left none, and whose rings wrapped. Ranks with the same story are one line.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "debug/analyzer_parts.h"

namespace collie {

using fold::RankInfo;

int agreed_world_size(const std::vector<RankInfo>& ranks, std::vector<Finding>& findings) {
  std::map<int, std::vector<int>> claims;  // world_size -> ranks whose dump says so
  int highest = -1;
  for (const RankInfo& d : ranks) {
    highest = std::max(highest, d.rank);
    if (d.world_size > 0) claims[d.world_size].push_back(d.rank);
  }
  if (claims.empty()) return highest + 1;
  auto best = claims.begin();
  for (auto it = claims.begin(); it != claims.end(); ++it) {
    if (it->second.size() > best->second.size()) best = it;
  }
  if (claims.size() > 1) {
    std::string said;
    std::vector<int> others;
    size_t listed = 0;
    for (const auto& [size, rs] : claims) {
      if (++listed <= 8) {
        said += fmt::format("{}{} say{} {}", said.empty() ? "" : "; ", rank_word(rs),
                            rs.size() == 1 ? "s" : "", size);
      }
      if (size != best->first) others.insert(others.end(), rs.begin(), rs.end());
    }
    if (listed > 8) said += fmt::format("; {} more sizes", listed - 8);
    std::sort(others.begin(), others.end());
    findings.push_back(Finding{
        .kind = "WORLD_SIZE_MISMATCH",
        .ranks = others,
        .message = fmt::format(
            "Dumps disagree on world_size ({}); analyzed as {} ranks: are dumps of another job "
            "in the folder? (--world-size N says which)",
            said, best->first)});
  }
  return best->first;
}

void note_dump_times(const std::vector<RankInfo>& ranks, Analysis& a) {
  const RankInfo *first = nullptr, *last = nullptr;
  std::vector<int> stepped;
  size_t ops = 0;
  int64_t by = 0;
  for (const RankInfo& d : ranks) {
    if (d.dump_time_ns == 0) continue;
    if (!first || d.dump_time_ns < first->dump_time_ns) first = &d;
    if (!last || d.dump_time_ns > last->dump_time_ns) last = &d;
    if (d.stepped > 0) {
      stepped.push_back(d.rank);
      ops += d.stepped;
      by = std::max(by, d.stepped_by_ns);
    }
  }
  if (!stepped.empty()) {
    const bool one = stepped.size() == 1;
    a.notes.push_back(fmt::format(
        "{}'s clock{} stepped back: {} op(s) recorded up to {:.3f} ms after {} dump time{}; "
        "their ages are unknown and count as old",
        rank_word(stepped), one ? "" : "s", ops, static_cast<double>(by) / 1e6,
        one ? "its" : "their", one ? "" : "s"));
  }
  if (first && last && first != last) {
    a.dump_spread_ms = static_cast<double>(last->dump_time_ns - first->dump_time_ns) / 1e6;
    a.first_dump_rank = first->rank;
    a.last_dump_rank = last->rank;
    a.notes.push_back(fmt::format(
        "dumps taken {:.3f} ms apart (rank {} first, rank {} last; wall clocks, so across hosts "
        "they include the clocks' skew)",
        a.dump_spread_ms, first->rank, last->rank));
  }
  if (a.stall_after_s > 0) {
    a.notes.push_back(fmt::format(
        "ops in flight under {:.1f} s, and ranks active within {:.1f} s of their dump, are not "
        "counted as stuck ({}; --stall to change)",
        a.stall_after_s, a.stall_after_s,
        a.live ? "a live job" : "every dump was requested from a running job"));
  }
}

namespace {

// Up to this many absent ranks are one finding each; more are one finding together.
constexpr size_t kAbsentOneByOne = 8;

void report_unreachable(Analysis& a, const std::vector<const UnreachableRank*>& u) {
  if (u.size() > kAbsentOneByOne) {
    std::vector<int> ranks;
    std::string whys;
    for (const UnreachableRank* x : u) ranks.push_back(x->rank);
    for (size_t i = 0; i < 3; ++i) whys += fmt::format("; rank {}: {}", u[i]->rank, u[i]->why);
    a.findings.push_back(Finding{
        .kind = "UNREACHABLE",
        .culprits = ranks,
        .ranks = ranks,
        .message = fmt::format(
            "Culprit {}; Error type: UNREACHABLE, {} ranks' debug servers did not answer{}, ...: "
            "the processes died, hang with their servers blocked, or never started one; check "
            "their logs and hosts",
            rank_word(ranks), count_text(u.size()), whys)});
    return;
  }
  for (const UnreachableRank* x : u) {
    a.findings.push_back(Finding{
        .kind = "UNREACHABLE",
        .culprits = {x->rank},
        .ranks = {x->rank},
        .message = fmt::format("Culprit rank {}; Error type: UNREACHABLE, its debug server did not "
                               "answer ({}): the process died, hangs with its server blocked, or "
                               "never started one; check its log and host",
                               x->rank, x->why)});
  }
}

}  // namespace

void report_absent_ranks(Analysis& a, const std::vector<UnreachableRank>& unreachable) {
  std::vector<const UnreachableRank*> by_rank(a.world_size, nullptr);
  for (const UnreachableRank& u : unreachable) {
    if (u.rank >= 0 && u.rank < a.world_size && by_rank[u.rank] == nullptr) by_rank[u.rank] = &u;
  }
  std::vector<int> missing;
  std::vector<const UnreachableRank*> silent;
  size_t next = 0;  // ranks_with_dumps is sorted
  for (int r = 0; r < a.world_size; ++r) {
    while (next < a.ranks_with_dumps.size() && a.ranks_with_dumps[next] < r) ++next;
    if (next < a.ranks_with_dumps.size() && a.ranks_with_dumps[next] == r) continue;
    if (by_rank[r] != nullptr) {
      silent.push_back(by_rank[r]);
    } else {
      missing.push_back(r);
    }
  }
  report_unreachable(a, silent);
  if (missing.size() > kAbsentOneByOne) {
    a.findings.push_back(
        Finding{.kind = "MISSING_DUMP",
                .culprits = missing,
                .ranks = missing,
                .message = fmt::format(
                    "Culprit {}; Error type: MISSING_DUMP, {} of {} ranks left no "
                    "flight-recorder dump: the processes died or hung before they could write "
                    "one (or do not share COLLIE_FR_DUMP_DIR); check their logs and exit status",
                    rank_word(missing), count_text(missing.size()), count_text(a.world_size))});
    return;
  }
  for (int r : missing) {
    a.findings.push_back(
        Finding{.kind = "MISSING_DUMP",
                .culprits = {r},
                .ranks = {r},
                .message = fmt::format(
                    "Culprit rank {}; Error type: MISSING_DUMP, rank {} left no flight-recorder "
                    "dump: the process died or hung before it could write one (or does not "
                    "share COLLIE_FR_DUMP_DIR); check its log and exit status",
                    r, r)});
  }
}

void report_wrapped_rings(const std::vector<RankInfo>& ranks, Analysis& a) {
  // A running job's rings wrap all the time: for live views and requested dumps that is a note;
  // in dumps written on a failure the lost history is evidence that is missing.
  for (const bool requested : {true, false}) {
    std::vector<int> who;
    uint64_t min_buf = UINT64_MAX, max_buf = 0, min_total = UINT64_MAX, max_total = 0;
    for (const RankInfo& d : ranks) {
      if (!d.wrapped || a.live || d.requested != requested) continue;
      who.push_back(d.rank);
      min_buf = std::min(min_buf, d.buffer_size);
      max_buf = std::max(max_buf, d.buffer_size);
      min_total = std::min(min_total, d.total_recorded);
      max_total = std::max(max_total, d.total_recorded);
    }
    if (who.empty()) continue;
    auto span = [](uint64_t lo, uint64_t hi) {
      return lo == hi ? std::to_string(lo) : fmt::format("{}-{}", lo, hi);
    };
    const std::string what =
        who.size() == 1
            ? fmt::format(
                  "rank {}'s ring wrapped: it kept the last {} of {} ops, older evidence "
                  "is lost (raise COLLIE_FR_BUFFER_SIZE)",
                  who[0], min_buf, min_total)
            : fmt::format(
                  "{}' rings wrapped: each kept its last {} of {} ops, older evidence is "
                  "lost (raise COLLIE_FR_BUFFER_SIZE)",
                  rank_word(who), span(min_buf, max_buf), span(min_total, max_total));
    if (requested) {
      a.notes.push_back(what);
    } else {
      a.findings.push_back(Finding{.kind = "RING_WRAPPED", .ranks = who, .message = what});
    }
  }
}

}  // namespace collie
