#include "debug/analyzer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "comm/rendezvous.h"
#include "core/error.h"
#include "core/printable.h"
#include "debug/flight_recorder.h"

namespace collie {
namespace {

using nlohmann::json;

std::string rank_word(const std::vector<int>& r) {
  return fmt::format("{} {}", r.size() == 1 ? "rank" : "ranks", format_ranks(r));
}

// format_ranks, cut after ~200 characters (the message is copied into every rank's verdict).
std::string capped_ranks(const std::vector<int>& r) {
  std::string s = format_ranks(r);
  constexpr size_t kMax = 200;
  if (s.size() <= kMax) return s;
  s.resize(s.rfind(", ", kMax));
  return s + ", ...";
}

struct GroupView {
  std::string pg_id;
  std::string desc;
  std::vector<int> members;
  // Per member with a dump: its collectives by seq, and p2p entries in order.
  std::map<int, std::map<uint64_t, const DumpEntry*>> coll;
  std::map<int, std::vector<const DumpEntry*>> p2p;
  std::map<int, const RankDump*> dumps;
  double stall_after_s = 0;
  const std::map<int, double>* idle_s = nullptr;  // per rank, see rank_idle_s

  // Seconds `e` had existed when rank r dumped; unknown times (and a time after the dump: the
  // rank's clock stepped back) count as old enough.
  double age_s(int r, const DumpEntry& e) const {
    const int64_t at = dumps.at(r)->dump_time_ns;
    if (at == 0 || e.time_created_ns == 0 || e.time_created_ns > at)
      return std::numeric_limits<double>::infinity();
    return (static_cast<double>(at) - static_cast<double>(e.time_created_ns)) / 1e9;
  }
  bool old_enough(int r, const DumpEntry& e) const { return age_s(r, e) >= stall_after_s; }
  // Rank r had done nothing for stall_after_s when it dumped: not merely behind.
  bool idle(int r) const {
    auto it = idle_s->find(r);
    return it == idle_s->end() || it->second >= stall_after_s;
  }
};

// Seconds between a rank's last recorded activity (an op created, started or completed, in any
// group) and its dump; infinity when unknown (no dump time, no entries, a clock that stepped).
double rank_idle_s(const RankDump& d) {
  int64_t last = 0;
  for (const DumpEntry& e : d.entries)
    last = std::max({last, e.time_created_ns, e.time_started_ns, e.time_completed_ns});
  if (d.dump_time_ns == 0 || last == 0 || last > d.dump_time_ns)
    return std::numeric_limits<double>::infinity();
  return static_cast<double>(d.dump_time_ns - last) / 1e9;
}

std::string age_text(double s) { return std::isfinite(s) ? fmt::format(" for {:.1f} s", s) : ""; }

// Majority value of `key` among entries; ties go to the value held by the lowest rank.
template <typename F>
void compare_field(const GroupView& g, uint64_t seq, const std::map<int, const DumpEntry*>& at,
                   const char* kind, const char* what, F key, std::vector<Finding>& out) {
  std::map<std::string, std::vector<int>> by;
  for (const auto& [r, e] : at) by[key(*e)].push_back(r);
  if (by.size() < 2) return;
  auto best = by.begin();
  for (auto it = by.begin(); it != by.end(); ++it) {
    if (it->second.size() > best->second.size() ||
        (it->second.size() == best->second.size() && it->second.front() < best->second.front())) {
      best = it;
    }
  }
  for (const auto& [val, ranks] : by) {
    if (val == best->first) continue;
    for (int r : ranks) {
      out.push_back(Finding{
          .pg_id = g.pg_id,
          .kind = kind,
          .culprits = {r},
          .ranks = {r},
          .seq = seq,
          .message = fmt::format(
              "Culprit rank {}; Error type: {}, Expected {}: '{}' does not match found {}: '{}' "
              "(collective sequence number {}; {} called '{}')",
              r, kind, what, best->first, what, val, seq, rank_word(best->second), best->first)});
    }
  }
}

// One line of a NOT_ALL_JOINED message: where rank r, which never reached collective `s`, is.
std::string absent_rank_line(const GroupView& g, int r, uint64_t s) {
  const auto& m = g.coll.at(r);
  const RankDump::Group& st = g.dumps.at(r)->groups.at(g.pg_id);
  if (m.empty()) return fmt::format("\n  [{}] recorded no collective in this group", r);
  const DumpEntry* last = m.rbegin()->second;
  return fmt::format(
      "\n  [{}] finished collective #{}, but didn't join collective #{} "
      "(last recorded: {} #{}, {})",
      r, st.last_completed, s, last->op, m.rbegin()->first, last->state);
}

// `absent` never reached collective `s`, which the ranks in `at` joined.
Finding not_all_joined(const GroupView& g, uint64_t s, const std::map<int, const DumpEntry*>& at,
                       const std::vector<int>& absent) {
  const DumpEntry* e = at.begin()->second;
  std::vector<int> joined;
  double waited = 0;
  for (const auto& [r, x] : at) {
    joined.push_back(r);
    if (x->state != "completed") waited = std::max(waited, g.age_s(r, *x));
  }
  std::string detail;
  for (int r : absent) detail += absent_rank_line(g, r, s);
  return Finding{
      .pg_id = g.pg_id,
      .kind = "NOT_ALL_JOINED",
      .culprits = absent,
      .ranks = absent,
      .seq = s,
      .message = fmt::format(
          "Not all ranks joining collective, sequence number: {}\n  {} ({}) joined{}; missing {}{}",
          s, rank_word(joined), e->op,
          waited > 0 && std::isfinite(waited) ? " and waited" + age_text(waited) : "",
          rank_word(absent), detail)};
}

// Each member's last recorded collective seq in g (0 when it recorded none).
std::map<int, uint64_t> last_seqs(const GroupView& g) {
  std::map<int, uint64_t> last;
  for (const auto& [r, m] : g.coll) last[r] = m.empty() ? 0 : m.rbegin()->first;
  return last;
}

// The seqs worth checking. Seqs below every ring's oldest entry have no evidence left (a
// long-running job), and only seqs some rank recorded can show a problem (both checks need a
// rank that joined), so these are the recorded seqs from there on, never the numbers between.
std::set<uint64_t> seqs_to_check(const GroupView& g, const std::map<int, uint64_t>& last_seq) {
  uint64_t max_seq = 0;
  for (const auto& [r, last] : last_seq) max_seq = std::max(max_seq, last);
  uint64_t start = max_seq;
  for (const auto& [r, m] : g.coll) {
    if (!m.empty()) start = std::min(start, m.begin()->first);
  }
  std::set<uint64_t> seqs;
  for (const auto& [r, m] : g.coll) {
    for (const auto& [s, e] : m) {
      if (s >= std::max<uint64_t>(start, 1)) seqs.insert(s);
    }
  }
  return seqs;
}

// Who recorded collective `s` (their entries) and who never reached it.
struct SeqParticipants {
  std::map<int, const DumpEntry*> at;
  std::vector<int> absent;
};

SeqParticipants participants(const GroupView& g, uint64_t s,
                             const std::map<int, uint64_t>& last_seq) {
  SeqParticipants p;
  for (const auto& [r, m] : g.coll) {
    auto it = m.find(s);
    if (it != m.end()) {
      p.at[r] = it->second;
    } else if (s > last_seq.at(r)) {
      p.absent.push_back(r);  // never reached s (earlier seqs lost to a wrapped ring prove nothing)
    }
  }
  return p;
}

// `s` is the first seq some ranks never reached; later ones are younger, so if the ranks that
// joined have not waited stall_after_s here, nobody is late yet.
// An absent rank is to blame only when it sat idle: one still moving when it dumped is behind,
// and one still in flight in an earlier op of this group is blocked there (waiting for someone
// else, e.g. a frozen rank that left no dump); both are named in the message, not blamed. When
// every absent rank is moving nothing is reported here (the joined ranks' wait shows as STUCK).
void report_not_all_joined(const GroupView& g, uint64_t s, const SeqParticipants& p,
                           std::vector<Finding>& out) {
  bool waited = false;
  for (const auto& [r, e] : p.at) waited = waited || g.old_enough(r, *e);
  if (!waited) return;
  std::vector<int> idle, moving, blocked;
  for (int r : p.absent) {
    const auto& m = g.coll.at(r);
    const bool in_flight = !m.empty() && m.rbegin()->second->state != "completed";
    (in_flight ? blocked : g.idle(r) ? idle : moving).push_back(r);
  }
  if (idle.empty() && blocked.empty()) return;
  std::vector<int> named = idle;
  named.insert(named.end(), blocked.begin(), blocked.end());
  std::sort(named.begin(), named.end());
  Finding f = not_all_joined(g, s, p.at, named);
  f.culprits = idle;
  if (!blocked.empty()) {
    f.message += fmt::format("\n  {} blocked in an earlier op of this group (not blamed)",
                             rank_word(blocked));
  }
  if (!moving.empty()) {
    f.message += fmt::format(
        "\n  also behind but still moving (active within {:.1f} s of their dumps, not blamed): {}",
        g.stall_after_s, rank_word(moving));
  }
  out.push_back(std::move(f));
}

// Every rank reached collective `s`, but some only after another rank had already given up on it
// (its entry for `s` failed before theirs was created): they arrived late, and the others' failure
// is theirs. Seen when a slow rank dumps again after it finally joined (its last dump shows it in
// `s`, like everyone else). Wall clocks of the dumping ranks: across hosts their skew counts, so
// a rank is late only when it arrived after the last of those failures.
bool report_late_arrivals(const GroupView& g, uint64_t s, const std::map<int, const DumpEntry*>& at,
                          std::vector<Finding>& out) {
  int64_t first_created = 0;
  for (const auto& [r, e] : at) {
    if (e->time_created_ns > 0 && (first_created == 0 || e->time_created_ns < first_created))
      first_created = e->time_created_ns;
  }
  std::vector<int> late;
  std::set<int> gave_up;
  double by_s = 0;
  for (const auto& [l, el] : at) {
    if (el->time_created_ns == 0) continue;
    int64_t failed_by = 0;  // the last failure, before l arrived, of a rank that came earlier
    std::vector<int> before;
    for (const auto& [r, e] : at) {
      if (r == l || !e->failed || e->time_completed_ns == 0 || e->time_created_ns == 0 ||
          e->time_created_ns >= el->time_created_ns)
        continue;
      before.push_back(r);
      failed_by = std::max(failed_by, e->time_completed_ns);
    }
    if (before.empty() || el->time_created_ns <= failed_by) continue;
    late.push_back(l);
    gave_up.insert(before.begin(), before.end());
    by_s = std::max(by_s, static_cast<double>(el->time_created_ns - first_created) / 1e9);
  }
  if (late.empty()) return false;
  out.push_back(Finding{
      .pg_id = g.pg_id,
      .kind = "NOT_ALL_JOINED",
      .culprits = late,
      .ranks = late,
      .seq = s,
      .message = fmt::format(
          "Not all ranks joining collective, sequence number: {}\n  {} reached {} #{} {:.1f} s "
          "after the first rank, when {} had already failed it (the late rank held them up)",
          s, rank_word(late), at.begin()->second->op, s, by_s,
          rank_word(std::vector<int>(gave_up.begin(), gave_up.end())))});
  return true;
}

// The fields of collective `s` that differ between the ranks that recorded it: the type first,
// and only when the types agree the sizes, dtypes and root. Returns whether it found any.
bool report_mismatches(const GroupView& g, uint64_t s, const std::map<int, const DumpEntry*>& at,
                       std::vector<Finding>& out) {
  const size_t before = out.size();
  compare_field(
      g, s, at, "COLLECTIVE_TYPE_MISMATCH", "collective type",
      [](const DumpEntry& e) { return e.op; }, out);
  if (out.size() != before) return true;
  compare_field(
      g, s, at, "SIZE_MISMATCH", "input sizes", [](const DumpEntry& e) { return e.sizes; }, out);
  compare_field(
      g, s, at, "DTYPE_MISMATCH", "input dtypes", [](const DumpEntry& e) { return e.dtypes; }, out);
  compare_field(
      g, s, at, "ROOT_MISMATCH", "root", [](const DumpEntry& e) { return std::to_string(e.root); },
      out);
  return out.size() != before;
}

// The first seq some ranks never reached (NOT_ALL_JOINED) and the first seq whose fields
// differ between ranks (the *_MISMATCH kinds): one of each at most.
void analyze_collectives(const GroupView& g, std::vector<Finding>& out) {
  const std::map<int, uint64_t> last_seq = last_seqs(g);
  const std::set<uint64_t> seqs = seqs_to_check(g, last_seq);
  bool reported_join = false, reported_mismatch = false;
  for (auto si = seqs.begin(); si != seqs.end() && !(reported_join && reported_mismatch); ++si) {
    const uint64_t s = *si;
    const SeqParticipants p = participants(g, s, last_seq);
    if (!reported_join && !p.absent.empty() && !p.at.empty()) {
      reported_join = true;
      report_not_all_joined(g, s, p, out);
    } else if (!reported_join && p.absent.empty() && p.at.size() >= 2) {
      reported_join = report_late_arrivals(g, s, p.at, out);
    }
    if (!reported_mismatch && p.at.size() >= 2) {
      reported_mismatch = report_mismatches(g, s, p.at, out);
    }
  }
}

using P2pEntries = std::vector<const DumpEntry*>;

// A rank's sends, by destination, in the order it issued them.
std::map<int, P2pEntries> sends_by_peer(const P2pEntries& ents) {
  std::map<int, P2pEntries> sends;
  for (const DumpEntry* e : ents) {
    if (e->op == "send") sends[e->peer].push_back(e);
  }
  return sends;
}

// A rank's recvs from `src`, in the order it posted them.
P2pEntries recvs_from(const P2pEntries& ents, int src) {
  P2pEntries rs;
  for (const DumpEntry* e : ents) {
    if (e->op == "recv" && e->peer == src) rs.push_back(e);
  }
  return rs;
}

// The first problem between r's sends to q (ss) and q's recvs from r (rs): the k-th send pairs
// with the k-th recv. A pair that disagrees is a P2P_MISMATCH; a send or recv left without its
// partner is UNMATCHED_P2P once it is old enough (before that the partner may still be posted).
std::optional<Finding> first_p2p_problem(const GroupView& g, int r, int q, const P2pEntries& ss,
                                         const P2pEntries& rs) {
  for (size_t k = 0; k < std::max(ss.size(), rs.size()); ++k) {
    if (k < ss.size() && k < rs.size()) {
      if (ss[k]->sizes == rs[k]->sizes && ss[k]->dtypes == rs[k]->dtypes) continue;
      return Finding{.pg_id = g.pg_id,
                     .kind = "P2P_MISMATCH",
                     .culprits = {r, q},
                     .ranks = {r, q},
                     .seq = k + 1,
                     .message = fmt::format(
                         "send #{} from rank {} ({} {}) does not match recv on rank {} ({} {})",
                         k + 1, r, ss[k]->dtypes, ss[k]->sizes, q, rs[k]->dtypes, rs[k]->sizes)};
    }
    if (k < ss.size()) {
      if (!g.old_enough(r, *ss[k])) return std::nullopt;  // the recv may still be posted
      return Finding{
          .pg_id = g.pg_id,
          .kind = "UNMATCHED_P2P",
          .culprits = {q},
          .ranks = {r, q},
          .seq = k + 1,
          .message = fmt::format(
              "Culprit rank {}; Error type: UNMATCHED_P2P, rank {} called send #{} to rank {} ({} "
              "{}, {}) but rank {} never posted the matching recv",
              q, r, k + 1, q, ss[k]->dtypes, ss[k]->sizes, ss[k]->state, q)};
    }
    if (!g.old_enough(q, *rs[k])) return std::nullopt;  // the send may still be posted
    return Finding{
        .pg_id = g.pg_id,
        .kind = "UNMATCHED_P2P",
        .culprits = {r},
        .ranks = {r, q},
        .seq = k + 1,
        .message = fmt::format(
            "Culprit rank {}; Error type: UNMATCHED_P2P, rank {} called recv #{} from rank {} "
            "({} {}, {}) but rank {} never posted the matching send",
            r, q, k + 1, r, rs[k]->dtypes, rs[k]->sizes, rs[k]->state, r)};
  }
  return std::nullopt;
}

// One finding at most per (sender, receiver) pair whose rings did not wrap.
void analyze_p2p(const GroupView& g, std::vector<Finding>& out) {
  for (const auto& [r, ents] : g.p2p) {
    if (g.dumps.at(r)->wrapped) continue;
    for (const auto& [q, ss] : sends_by_peer(ents)) {
      auto it = g.p2p.find(q);
      if (it == g.p2p.end() || g.dumps.at(q)->wrapped) continue;
      if (auto f = first_p2p_problem(g, r, q, ss, recvs_from(it->second, r))) {
        out.push_back(std::move(*f));
      }
    }
  }
}

// STUCK: each member's oldest unfinished collective in group `id`, once it is old enough.
void analyze_stuck(const std::string& id, const GroupView& g, std::vector<Finding>& out) {
  for (const auto& [r, m] : g.coll) {
    auto open = std::find_if(m.begin(), m.end(),
                             [](const auto& se) { return se.second->state != "completed"; });
    if (open == m.end() || !g.old_enough(r, *open->second)) continue;
    const uint64_t s = open->first;
    const DumpEntry* e = open->second;
    out.push_back(
        Finding{.pg_id = id,
                .kind = "STUCK",
                .ranks = {r},
                .seq = s,
                .message = fmt::format("rank {} is in {} #{} of group {} (state {}){}", r, e->op, s,
                                       id, e->state, age_text(g.age_s(r, *e)))});
  }
}

}  // namespace

std::vector<int> Analysis::culprits() const {
  std::set<int> s;
  for (const auto& f : findings) s.insert(f.culprits.begin(), f.culprits.end());
  return {s.begin(), s.end()};
}

namespace {

// Severity of what a finding says about one of its ranks (0 = only a note).
int severity(const Finding& f, int rank, const char** state) {
  const bool culprit = std::find(f.culprits.begin(), f.culprits.end(), rank) != f.culprits.end();
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

std::string Analysis::summary() const {
  if (findings.empty()) {
    return live ? fmt::format("all {} ranks in step", world_size)
                : "no problem found: every rank agrees on every recorded op";
  }
  int bad = 0;
  for (const RankVerdict& v : verdicts()) bad += v.state == "ok" ? 0 : 1;
  const std::vector<int> c = culprits();
  std::string s = bad == 0 ? "no rank needs attention (evidence notes only)"
                           : fmt::format("{} of {} ranks need attention", bad, world_size);
  if (!c.empty()) s += fmt::format("; culprit {}", rank_word(c));
  return s;
}

namespace {

double automatic_stall_s(const std::vector<RankDump>& dumps, bool live) {
  if (live) return kAutoStallLiveS;
  const bool requested = !dumps.empty() && std::all_of(dumps.begin(), dumps.end(), [](auto& d) {
    return d.trigger == "request";
  });
  return requested ? kAutoStallRequestedS : 0;
}

// How far apart the dumps were taken, the threshold in force, and clocks that stepped back.
void note_dump_times(const std::vector<RankDump>& dumps, Analysis& a) {
  const RankDump *first = nullptr, *last = nullptr;
  for (const RankDump& d : dumps) {
    if (d.dump_time_ns == 0) continue;
    if (!first || d.dump_time_ns < first->dump_time_ns) first = &d;
    if (!last || d.dump_time_ns > last->dump_time_ns) last = &d;
    int stepped = 0;
    int64_t by = 0;
    for (const DumpEntry& e : d.entries) {
      if (e.time_created_ns > d.dump_time_ns) {
        ++stepped;
        by = std::max(by, e.time_created_ns - d.dump_time_ns);
      }
    }
    if (stepped > 0) {
      a.notes.push_back(fmt::format(
          "rank {}'s clock stepped back: {} op(s) recorded up to {:.3f} ms after its dump time; "
          "their ages are unknown and count as old",
          d.rank, stepped, static_cast<double>(by) / 1e6));
    }
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

}  // namespace

Analysis analyze(const std::vector<RankDump>& dumps, int expected_world) {
  AnalyzeOptions o;
  o.expected_world = expected_world;
  return analyze(dumps, o);
}

namespace {

// The world size of a folder of dumps: the size most of them claim (ties: the smaller, which
// names no rank that may not exist); when none claims one (0: written before the world group
// existed), the highest rank with a dump + 1. Dumps claiming another size are one finding naming
// them (dumps of two jobs in one folder, or a corrupt one) rather than ranks called missing.
int agreed_world_size(const std::vector<RankDump>& dumps, std::vector<Finding>& findings) {
  std::map<int, std::vector<int>> claims;  // world_size -> ranks whose dump says so
  int highest = -1;
  for (const RankDump& d : dumps) {
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
    for (const auto& [size, ranks] : claims) {
      said += fmt::format("{}{} say{} {}", said.empty() ? "" : "; ", rank_word(ranks),
                          ranks.size() == 1 ? "s" : "", size);
      if (size != best->first) others.insert(others.end(), ranks.begin(), ranks.end());
    }
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

}  // namespace

Analysis analyze(const std::vector<RankDump>& dumps, const AnalyzeOptions& opts) {
  AnalyzeOptions o = opts;
  Analysis a;
  a.world_size = o.expected_world < 0 ? agreed_world_size(dumps, a.findings) : o.expected_world;
  a.live = o.live;
  a.unreachable = o.unreachable;
  if (o.stall_after_s < 0) o.stall_after_s = automatic_stall_s(dumps, o.live);
  a.stall_after_s = o.stall_after_s;
  std::map<int, double> idle;
  for (const RankDump& d : dumps) idle[d.rank] = rank_idle_s(d);
  note_dump_times(dumps, a);
  std::map<std::string, GroupView> groups;
  for (const RankDump& d : dumps) {
    a.ranks_with_dumps.push_back(d.rank);
    for (const auto& [id, g] : d.groups) {
      GroupView& v = groups[id];
      v.pg_id = id;
      v.desc = g.desc;
      v.stall_after_s = o.stall_after_s;
      if (v.members.empty()) v.members = g.ranks;
      v.dumps[d.rank] = &d;
      v.coll[d.rank];
      v.p2p[d.rank];
    }
    for (const DumpEntry& e : d.entries) {
      if (e.is_p2p) {
        groups[e.pg_id].p2p[d.rank].push_back(&e);
      } else {
        groups[e.pg_id].coll[d.rank][e.collective_seq_id] = &e;
      }
    }
  }
  for (auto& [id, v] : groups) v.idle_s = &idle;
  std::sort(a.ranks_with_dumps.begin(), a.ranks_with_dumps.end());
  for (const UnreachableRank& u : o.unreachable) a.world_size = std::max(a.world_size, u.rank + 1);
  std::map<int, const UnreachableRank*> unreachable;
  for (const UnreachableRank& u : o.unreachable) unreachable.emplace(u.rank, &u);
  std::vector<int> missing;
  for (int r = 0; r < a.world_size; ++r) {
    if (std::binary_search(a.ranks_with_dumps.begin(), a.ranks_with_dumps.end(), r)) continue;
    auto u = unreachable.find(r);
    if (u != unreachable.end()) {
      a.findings.push_back(Finding{
          .kind = "UNREACHABLE",
          .culprits = {r},
          .ranks = {r},
          .message =
              fmt::format("Culprit rank {}; Error type: UNREACHABLE, its debug server did not "
                          "answer ({}): the process died, hangs with its server blocked, or "
                          "never started one; check its log and host",
                          r, u->second->why)});
      continue;
    }
    missing.push_back(r);
  }
  // Many missing ranks are one finding (a dump claiming a large world needs no per-rank text).
  constexpr size_t kMissingOneByOne = 8;
  if (missing.size() > kMissingOneByOne) {
    a.findings.push_back(
        Finding{.kind = "MISSING_DUMP",
                .culprits = missing,
                .ranks = missing,
                .message = fmt::format(
                    "Culprit ranks {}; Error type: MISSING_DUMP, {} of {} ranks left no "
                    "flight-recorder dump: the processes died or hung before they could write "
                    "one (or do not share COLLIE_FR_DUMP_DIR); check their logs and exit status",
                    capped_ranks(missing), missing.size(), a.world_size)});
    missing.clear();
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
  // A running job's rings wrap all the time: for live views and requested dumps that is a note;
  // in dumps written on a failure the lost history is evidence that is missing.
  for (const RankDump& d : dumps) {
    if (!d.wrapped || o.live) continue;
    const std::string what = fmt::format(
        "rank {}'s ring wrapped: it kept the last {} of {} ops, older evidence is lost (raise "
        "COLLIE_FR_BUFFER_SIZE)",
        d.rank, d.buffer_size, d.total_recorded);
    if (d.trigger == "request") {
      a.notes.push_back(what);
    } else {
      a.findings.push_back(Finding{.kind = "RING_WRAPPED", .ranks = {d.rank}, .message = what});
    }
  }
  for (auto& [id, g] : groups) {
    analyze_collectives(g, a.findings);
    analyze_p2p(g, a.findings);
    analyze_stuck(id, g, a.findings);
  }
  return a;
}

std::string to_text(const Analysis& a) {
  std::string out =
      a.live
          ? fmt::format("collie analyze --live: {} of {} ranks answered ({})\n",
                        a.ranks_with_dumps.size(), a.world_size, format_ranks(a.ranks_with_dumps))
          : fmt::format("collie analyze: {} of {} ranks left dumps ({})\n",
                        a.ranks_with_dumps.size(), a.world_size, format_ranks(a.ranks_with_dumps));
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
  out += c.empty()
             ? "No culprit rank identified.\n"
             : fmt::format("Culprit {}: {}\n", c.size() == 1 ? "rank" : "ranks", format_ranks(c));
  // Names from dumps were made printable when read; this covers text from elsewhere (a rank's
  // error, a store's address) that reached a finding.
  return printable_lines(out);
}

nlohmann::json to_json_value(const Analysis& a) {
  json j;
  j["world_size"] = a.world_size;
  j["live"] = a.live;
  j["stall_after_s"] = a.stall_after_s;
  j["dump_spread_ms"] = a.dump_spread_ms < 0 ? json(nullptr) : json(a.dump_spread_ms);
  j["notes"] = a.notes;
  j["ranks_with_dumps"] = a.ranks_with_dumps;
  j["unreachable"] = json::array();
  for (const UnreachableRank& u : a.unreachable) {
    j["unreachable"].push_back({{"rank", u.rank}, {"why", u.why}});
  }
  j["culprits"] = a.culprits();
  j["summary"] = a.summary();
  j["findings"] = json::array();
  for (const Finding& f : a.findings) {
    j["findings"].push_back({{"pg_id", f.pg_id},
                             {"kind", f.kind},
                             {"culprits", f.culprits},
                             {"ranks", f.ranks},
                             {"seq", f.seq},
                             {"message", f.message}});
  }
  j["ranks"] = json::array();
  for (const RankVerdict& v : a.verdicts()) {
    j["ranks"].push_back({{"rank", v.rank}, {"state", v.state}, {"reasons", v.reasons}});
  }
  return j;
}

std::string to_json(const Analysis& a) { return to_json_value(a).dump(2); }

}  // namespace collie
