// The analyzer's checks, run once on the folded summary (analyzer_fold.h): per group, the
// collectives in seq order (the first one some ranks never reached, late arrivals, the first one
// whose fields differ), send/recv pairs, and the ops ranks are stuck in; per job, the world size,
// missing dumps and wrapped rings. Every set of ranks is gathered first and named once.
#include "debug/analyzer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "debug/analyzer_fold.h"
#include "debug/analyzer_parts.h"

namespace collie {
namespace {

using namespace fold;

// What every check reads.
struct Ctx {
  const DumpFold::State& s;
  Analysis& a;
  double stall;
  std::vector<const RankInfo*> info;  // by rank; null without a dump
  const std::string& str(uint32_t id) const { return s.strings.str(id); }
  bool old_enough(double age) const { return age >= stall; }
  const RankInfo* rank(int r) const {
    return r >= 0 && static_cast<size_t>(r) < info.size() ? info[r] : nullptr;
  }
  // Rank r had done nothing for stall_after_s when it dumped: not merely behind.
  bool idle_rank(int r) const { return rank(r) == nullptr || rank(r)->idle_s >= stall; }
  bool completed(uint32_t state) const { return state == s.completed; }
};

std::string age_text(double s) { return std::isfinite(s) ? fmt::format(" for {:.1f} s", s) : ""; }

std::vector<int> ranks_of(const SeqAgg& agg) {
  std::vector<int> out;
  for (const SeqAgg::Variant& v : agg.variants) v.ranks.append_to(out);
  std::sort(out.begin(), out.end());
  return out;
}

// `s` is the first seq some ranks never reached; later ones are younger, so if the ranks that
// joined have not waited stall_after_s here, nobody is late yet.
// An absent rank is to blame only when it sat idle outside collectives: one still moving when it
// dumped is behind, one still in flight in an earlier op of this group is blocked there (waiting
// for someone else, e.g. a frozen rank that left no dump), and one in flight in (or failed out
// of) another group's op is blocked there (groups entered in different orders, or a hang
// elsewhere); they are named in the message, not blamed. When every absent rank is moving nothing
// is reported here (the joined ranks' wait shows as STUCK). The absent ranks are the lagging set,
// named whatever their number (NVIDIA/nccl#1911).
void report_not_all_joined(const Ctx& c, const GroupAgg& g, uint64_t s, const SeqAgg& agg,
                           std::vector<Finding>& out) {
  if (!c.old_enough(agg.max_age)) return;
  std::vector<int> idle, moving, blocked;
  // The ranks blamed, by their newest op anywhere (what they last did before going idle), with
  // the longest any of them had been idle.
  using Newest = std::tuple<uint32_t, uint32_t, uint64_t>;
  std::map<Newest, std::pair<std::vector<int>, double>> idle_at;
  // Where the absent ranks are: in this group (last op, state), or busy in another group.
  using Place = std::tuple<bool, uint64_t, uint64_t, uint32_t, uint32_t>;
  std::map<Place, std::vector<int>> places;
  using Elsewhere = std::tuple<uint32_t, uint32_t, uint64_t, uint32_t>;
  std::map<Elsewhere, std::vector<int>> elsewhere;
  for (const Member& m : g.members) {
    if (m.has_coll && m.last_seq >= s) continue;
    const RankInfo* info = c.rank(m.rank);
    if (m.has_coll && !c.completed(m.last_state)) {
      blocked.push_back(m.rank);
    } else if (info != nullptr && info->busy) {
      elsewhere[{info->busy_group, info->busy_op, info->busy_seq, info->busy_state}].push_back(
          m.rank);
      continue;
    } else if (c.idle_rank(m.rank)) {
      idle.push_back(m.rank);
      if (info != nullptr) {
        auto& [ranks, idle_s] = idle_at[{info->newest_group, info->newest_op, info->newest_seq}];
        ranks.push_back(m.rank);
        if (std::isfinite(info->idle_s)) idle_s = std::max(idle_s, info->idle_s);
      }
    } else {
      moving.push_back(m.rank);
      continue;
    }
    places[{m.has_coll, m.last_completed, m.last_seq, m.last_op, m.last_state}].push_back(m.rank);
  }
  if (idle.empty() && blocked.empty() && elsewhere.empty()) return;
  std::vector<int> named = idle;
  named.insert(named.end(), blocked.begin(), blocked.end());
  for (const auto& [where, ranks] : elsewhere)
    named.insert(named.end(), ranks.begin(), ranks.end());
  std::sort(named.begin(), named.end());
  std::vector<std::pair<Place, std::vector<int>>> ordered(places.begin(), places.end());
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& x, const auto& y) { return x.second.front() < y.second.front(); });
  std::string detail;
  for (const auto& [p, ranks] : ordered) {
    const auto& [has_coll, last_completed, last_seq, op, state] = p;
    const std::string who = fmt::format("[{}]", capped_ranks(ranks));
    detail += has_coll ? fmt::format(
                             "\n  {} finished collective #{}, but didn't join collective #{} "
                             "(last recorded: {} #{}, {})",
                             who, last_completed, s, c.str(op), last_seq, c.str(state))
                       : fmt::format("\n  {} recorded no collective in this group", who);
  }
  const double waited = agg.max_open_age;
  Finding f{
      .pg_id = g.pg_id,
      .kind = "NOT_ALL_JOINED",
      .culprits = idle,
      .ranks = named,
      .seq = s,
      .message = fmt::format(
          "Not all ranks joining collective, sequence number: {}\n  {} ({}) joined{}; missing {}{}",
          s, set_text(ranks_of(agg)), c.str(agg.first().op),
          waited > 0 && std::isfinite(waited) ? " and waited" + age_text(waited) : "",
          who_text(c.a, named), detail)};
  f.facts = {{"op", c.str(agg.first().op)},
             {"joined", ranks_of(agg)},
             {"waited_s", std::isfinite(waited) ? waited : -1},
             {"idle", nlohmann::json::array()},
             {"blocked_here", blocked},
             {"elsewhere", nlohmann::json::array()},
             {"moving", moving}};
  for (const auto& [at, x] : idle_at) {
    f.facts["idle"].push_back({{"ranks", x.first},
                               {"group", c.str(std::get<0>(at))},
                               {"op", c.str(std::get<1>(at))},
                               {"seq", std::get<2>(at)},
                               {"idle_s", x.second > 0 ? x.second : -1}});
  }
  for (const auto& [where, ranks] : elsewhere) {
    f.facts["elsewhere"].push_back({{"ranks", ranks},
                                    {"group", c.str(std::get<0>(where))},
                                    {"op", c.str(std::get<1>(where))},
                                    {"seq", std::get<2>(where)},
                                    {"state", c.str(std::get<3>(where))}});
  }
  if (!blocked.empty()) {
    f.message += fmt::format("\n  {} blocked in an earlier op of this group (not blamed)",
                             rank_word(blocked));
  }
  for (const auto& [where, ranks] : elsewhere) {
    const auto& [group, op, seq, state] = where;
    f.message += fmt::format("\n  {} blocked in {} #{} of group {} ({}; not blamed)",
                             rank_word(ranks), c.str(op), seq, c.str(group), c.str(state));
  }
  if (!moving.empty()) {
    f.message += fmt::format(
        "\n  also behind but still moving (active within {:.1f} s of their dumps, not blamed): {}",
        c.stall, rank_word(moving));
  }
  out.push_back(std::move(f));
}

// Every rank reached collective `s`, but some only after another rank had already given up on it
// (its entry for `s` failed before theirs was created): they arrived late, and the others' failure
// is theirs. Seen when a slow rank dumps again after it finally joined (its last dump shows it in
// `s`, like everyone else). Wall clocks of the dumping ranks: across hosts their skew counts, so
// a rank is late only when it arrived after the last of those failures. Judged among the failed
// entries and the kKeptArrivals latest arrivals, swept in the order they arrived.
bool report_late_arrivals(const Ctx& c, const GroupAgg& g, uint64_t s, const SeqAgg& agg,
                          std::vector<Finding>& out) {
  if (agg.failed.empty()) return false;
  struct Cand {
    int rank;
    int64_t created, completed;
    bool failed;
  };
  std::map<int, Cand> by_rank;
  for (const auto& x : agg.latest) by_rank[x.rank] = {x.rank, x.created, x.completed, false};
  for (const auto& x : agg.failed) by_rank[x.rank] = {x.rank, x.created, x.completed, true};
  std::vector<Cand> cands;
  for (const auto& [r, x] : by_rank) cands.push_back(x);
  std::stable_sort(cands.begin(), cands.end(),
                   [](const Cand& x, const Cand& y) { return x.created < y.created; });
  std::vector<int> late;
  int64_t failed_by = 0, latest_late = 0;  // the last failure among those before, so far
  bool any_before = false;
  for (size_t i = 0; i < cands.size();) {
    size_t j = i;
    while (j < cands.size() && cands[j].created == cands[i].created) ++j;
    for (size_t k = i; k < j; ++k) {
      if (cands[k].created == 0 || !any_before || cands[k].created <= failed_by) continue;
      late.push_back(cands[k].rank);
      latest_late = cands[k].created;
    }
    for (size_t k = i; k < j; ++k) {
      if (!cands[k].failed || cands[k].completed == 0 || cands[k].created == 0) continue;
      any_before = true;
      failed_by = std::max(failed_by, cands[k].completed);
    }
    i = j;
  }
  if (late.empty()) return false;
  std::sort(late.begin(), late.end());
  std::vector<int> gave_up;
  for (const Cand& x : cands) {
    if (x.failed && x.completed != 0 && x.created != 0 && x.created < latest_late)
      gave_up.push_back(x.rank);
  }
  std::sort(gave_up.begin(), gave_up.end());
  const double by_s = static_cast<double>(latest_late - agg.first_created) / 1e9;
  std::string more;
  if (agg.latest.size() == kKeptArrivals &&
      std::count(late.begin(), late.end(), agg.latest.front().rank) > 0) {
    more =
        fmt::format(" (maybe more: only the {} latest arrivals of an op are kept)", kKeptArrivals);
  }
  out.push_back(Finding{
      .pg_id = g.pg_id,
      .kind = "NOT_ALL_JOINED",
      .culprits = late,
      .ranks = late,
      .seq = s,
      .message = fmt::format(
          "Not all ranks joining collective, sequence number: {}\n  {} reached {} #{} {:.1f} s "
          "after the first rank, when {} had already failed it (the late rank held them up){}",
          s, who_text(c.a, late), c.str(agg.first().op), s, by_s, set_text(gave_up), more),
      .facts = {
          {"op", c.str(agg.first().op)}, {"late", late}, {"by_s", by_s}, {"gave_up", gave_up}}});
  return true;
}

// One finding per value of a field that is not the majority's (ties: the value the lowest rank
// holds), naming the ranks that hold it.
template <typename F>
void compare_field(const Ctx& c, const GroupAgg& g, uint64_t s, const SeqAgg& agg, const char* kind,
                   const char* what, F key, std::vector<Finding>& out) {
  struct Value {
    size_t count = 0;
    int lowest = -1;
    std::vector<int> ranks;
  };
  std::map<std::string, Value> by;
  for (const SeqAgg::Variant& v : agg.variants) {
    Value& x = by[key(v)];
    x.count += v.ranks.count();
    if (x.lowest < 0 || v.ranks.lowest() < x.lowest) x.lowest = v.ranks.lowest();
    v.ranks.append_to(x.ranks);
  }
  if (by.size() < 2) return;
  auto best = by.begin();
  for (auto it = by.begin(); it != by.end(); ++it) {
    if (it->second.count > best->second.count ||
        (it->second.count == best->second.count && it->second.lowest < best->second.lowest)) {
      best = it;
    }
  }
  std::sort(best->second.ranks.begin(), best->second.ranks.end());
  for (auto& [val, x] : by) {
    if (val == best->first) continue;
    std::sort(x.ranks.begin(), x.ranks.end());
    out.push_back(
        Finding{.pg_id = g.pg_id,
                .kind = kind,
                .culprits = x.ranks,
                .ranks = x.ranks,
                .seq = s,
                .message = fmt::format(
                    "Culprit {}; Error type: {}, Expected {}: '{}' does not match found {}: '{}' "
                    "(collective sequence number {}; {} called '{}'{})",
                    rank_word(x.ranks), kind, what, best->first, what, val, s,
                    set_text(best->second.ranks), best->first, host_note(c.a, x.ranks)),
                .facts = {{"field", what},
                          {"op", c.str(agg.first().op)},
                          {"expected", best->first},
                          {"found", val},
                          {"expected_ranks", best->second.ranks},
                          {"found_ranks", x.ranks}}});
  }
}

// The fields of collective `s` that differ between the ranks that recorded it: the type first,
// and only when the types agree the sizes, dtypes and root. Returns whether it found any.
bool report_mismatches(const Ctx& c, const GroupAgg& g, uint64_t s, const SeqAgg& agg,
                       std::vector<Finding>& out) {
  if (agg.variants.size() < 2) return false;
  const size_t before = out.size();
  compare_field(
      c, g, s, agg, "COLLECTIVE_TYPE_MISMATCH", "collective type",
      [&](const SeqAgg::Variant& v) { return c.str(v.op); }, out);
  if (out.size() != before) return true;
  compare_field(
      c, g, s, agg, "SIZE_MISMATCH", "input sizes",
      [&](const SeqAgg::Variant& v) { return c.str(v.sizes); }, out);
  compare_field(
      c, g, s, agg, "DTYPE_MISMATCH", "input dtypes",
      [&](const SeqAgg::Variant& v) { return c.str(v.dtypes); }, out);
  compare_field(
      c, g, s, agg, "ROOT_MISMATCH", "root",
      [](const SeqAgg::Variant& v) { return std::to_string(v.root); }, out);
  return out.size() != before;
}

// The first seq some ranks never reached (NOT_ALL_JOINED) and the first seq whose fields
// differ between ranks (the *_MISMATCH kinds): one of each at most. Seqs below every ring's
// oldest entry have no evidence left, and only recorded seqs can show a problem, so these are
// the recorded seqs (from 1), never the numbers between. A seq is missing for the members whose
// highest recorded seq is below it.
void analyze_collectives(const Ctx& c, const GroupAgg& g, std::vector<Finding>& out) {
  uint64_t min_last = UINT64_MAX;
  for (const Member& m : g.members) min_last = std::min(min_last, m.has_coll ? m.last_seq : 0);
  bool reported_join = false, reported_mismatch = false;
  for (auto it = g.seqs.lower_bound(1); it != g.seqs.end() && !(reported_join && reported_mismatch);
       ++it) {
    const uint64_t s = it->first;
    const SeqAgg& agg = it->second;
    const bool someone_absent = s > min_last;
    if (!reported_join && someone_absent) {
      reported_join = true;
      report_not_all_joined(c, g, s, agg, out);
    } else if (!reported_join && !someone_absent && agg.count() >= 2) {
      reported_join = report_late_arrivals(c, g, s, agg, out);
    }
    if (!reported_mismatch && agg.count() >= 2) {
      reported_mismatch = report_mismatches(c, g, s, agg, out);
    }
  }
}

// The first problem between r's sends to q (ss) and q's recvs from r (rs): the k-th send pairs
// with the k-th recv. A pair that disagrees is a P2P_MISMATCH; a send or recv left without its
// partner is UNMATCHED_P2P once it is old enough (before that the partner may still be posted).
std::optional<Finding> first_p2p_problem(const Ctx& c, const GroupAgg& g, int r, int q,
                                         const std::vector<const P2p*>& ss,
                                         const std::vector<const P2p*>& rs) {
  for (size_t k = 0; k < std::max(ss.size(), rs.size()); ++k) {
    if (k < ss.size() && k < rs.size()) {
      if (ss[k]->sizes == rs[k]->sizes && ss[k]->dtypes == rs[k]->dtypes) continue;
      return Finding{.pg_id = g.pg_id,
                     .kind = "P2P_MISMATCH",
                     .culprits = {std::min(r, q), std::max(r, q)},
                     .ranks = {std::min(r, q), std::max(r, q)},
                     .seq = k + 1,
                     .message = fmt::format(
                         "send #{} from rank {} ({} {}) does not match recv on rank {} ({} {})",
                         k + 1, r, c.str(ss[k]->dtypes), c.str(ss[k]->sizes), q,
                         c.str(rs[k]->dtypes), c.str(rs[k]->sizes))};
    }
    if (k < ss.size()) {
      if (!c.old_enough(ss[k]->age)) return std::nullopt;  // the recv may still be posted
      return Finding{
          .pg_id = g.pg_id,
          .kind = "UNMATCHED_P2P",
          .culprits = {q},
          .ranks = {std::min(r, q), std::max(r, q)},
          .seq = k + 1,
          .message = fmt::format(
              "Culprit rank {}; Error type: UNMATCHED_P2P, rank {} called send #{} to rank {} ({} "
              "{}, {}) but rank {} never posted the matching recv",
              q, r, k + 1, q, c.str(ss[k]->dtypes), c.str(ss[k]->sizes), c.str(ss[k]->state), q)};
    }
    if (!c.old_enough(rs[k]->age)) return std::nullopt;  // the send may still be posted
    return Finding{
        .pg_id = g.pg_id,
        .kind = "UNMATCHED_P2P",
        .culprits = {r},
        .ranks = {std::min(r, q), std::max(r, q)},
        .seq = k + 1,
        .message = fmt::format(
            "Culprit rank {}; Error type: UNMATCHED_P2P, rank {} called recv #{} from rank {} "
            "({} {}, {}) but rank {} never posted the matching send",
            r, q, k + 1, r, c.str(rs[k]->dtypes), c.str(rs[k]->sizes), c.str(rs[k]->state), r)};
  }
  return std::nullopt;
}

// One finding at most per (sender, receiver) pair whose rings did not wrap.
void analyze_p2p(const Ctx& c, const GroupAgg& g, std::vector<Finding>& out) {
  for (const Member& m : g.members) {
    if (m.wrapped || m.p2p.empty()) continue;
    std::map<int, std::vector<const P2p*>> sends;  // by destination, in the order issued
    for (const P2p& p : m.p2p) {
      if (p.send) sends[p.peer].push_back(&p);
    }
    for (const auto& [q, ss] : sends) {
      const Member* peer = g.member(q);
      if (peer == nullptr || peer->wrapped) continue;
      std::vector<const P2p*> rs;  // q's recvs from m, in the order posted
      for (const P2p& p : peer->p2p) {
        if (!p.send && p.peer == m.rank) rs.push_back(&p);
      }
      if (auto f = first_p2p_problem(c, g, m.rank, q, ss, rs)) {
        f->facts = {{"field", f->kind == "P2P_MISMATCH" ? "sizes" : "peer"},
                    {"op", "send/recv"},
                    {"from", m.rank},
                    {"to", q}};
        out.push_back(std::move(*f));
      }
    }
  }
}

// STUCK: each member's oldest unfinished collective, once it is old enough; the ranks in the
// same op and state are one finding.
void analyze_stuck(const Ctx& c, const GroupAgg& g, std::vector<Finding>& out) {
  struct Stuck {
    std::vector<int> ranks;
    double min_age = kUnknownAge, max_age = 0;
  };
  std::map<std::tuple<uint64_t, uint32_t, uint32_t>, Stuck> by;
  for (const Member& m : g.members) {
    if (!m.has_open || !c.old_enough(m.open_age)) continue;
    Stuck& x = by[{m.open_seq, m.open_op, m.open_state}];
    x.ranks.push_back(m.rank);
    x.min_age = std::min(x.min_age, m.open_age);
    x.max_age = std::max(x.max_age, m.open_age);
  }
  uint64_t min_last = UINT64_MAX;
  for (const Member& m : g.members) min_last = std::min(min_last, m.has_coll ? m.last_seq : 0);
  for (const auto& [key, x] : by) {
    const auto& [seq, op, state] = key;
    std::string age = age_text(x.max_age);
    if (std::isfinite(x.max_age) &&
        fmt::format("{:.1f}", x.min_age) != fmt::format("{:.1f}", x.max_age))
      age = fmt::format(" for {:.1f}-{:.1f} s", x.min_age, x.max_age);
    else if (!std::isfinite(x.max_age) && std::isfinite(x.min_age))
      age = fmt::format(" for {:.1f} s or longer", x.min_age);
    out.push_back(
        Finding{.pg_id = g.pg_id,
                .kind = "STUCK",
                .ranks = x.ranks,
                .seq = seq,
                .message = fmt::format("{} {} in {} #{} of group {} (state {}){}",
                                       who_text(c.a, x.ranks), x.ranks.size() == 1 ? "is" : "are",
                                       c.str(op), seq, g.pg_id, c.str(state), age),
                .facts = {{"op", c.str(op)},
                          {"state", c.str(state)},
                          {"min_age_s", std::isfinite(x.min_age) ? x.min_age : -1},
                          {"max_age_s", std::isfinite(x.max_age) ? x.max_age : -1},
                          {"all_joined", seq <= min_last && g.members.size() >= g.size},
                          {"members_without_dump", g.members.size() < g.size}}});
  }
}

// Who arrived last at each collective two or more ranks recorded, from each op's latest arrivals
// (SeqAgg::latest); each rank's share of the collectives it was in comes from the runs of ranks
// that recorded them.
void note_last_arrivals(const DumpFold::State& s, Analysis& a) {
  fold::LastArrivals all = s.retired;  // the collectives the fold retired, then the rest
  for (const auto& [id, g] : s.groups) {
    for (const auto& [seq, agg] : g.seqs) all.add(agg);
  }
  std::vector<int64_t> in_ops(a.rank_host.size() + 1, 0);  // difference array over ranks
  for (const auto& [run, n] : all.runs) {
    const auto [lo, hi] = run;
    if (static_cast<size_t>(hi) + 1 >= in_ops.size()) continue;
    in_ops[lo] += n;
    in_ops[hi + 1] -= n;
  }
  auto& last = all.by_rank;
  for (size_t r = 1; r < in_ops.size(); ++r) in_ops[r] += in_ops[r - 1];
  for (auto& [rank, l] : last) {
    std::sort(l.margins_ms.begin(), l.margins_ms.end());
    a.last_arrivals.push_back({.rank = rank,
                               .last = l.count,
                               .ops = static_cast<size_t>(in_ops[rank]),
                               .median_margin_ms = l.margins_ms[l.margins_ms.size() / 2],
                               .max_margin_ms = l.margins_ms.back()});
  }
  std::sort(a.last_arrivals.begin(), a.last_arrivals.end(),
            [](const auto& x, const auto& y) { return x.last > y.last; });
}

double automatic_stall_s(const std::vector<RankInfo>& ranks, bool live) {
  if (live) return kAutoStallLiveS;
  const bool requested =
      !ranks.empty() &&
      std::all_of(ranks.begin(), ranks.end(), [](const RankInfo& r) { return r.requested; });
  return requested ? kAutoStallRequestedS : 0;
}

}  // namespace

Analysis DumpFold::analyze(const AnalyzeOptions& opts) {
  State& s = *s_;
  std::sort(s.ranks.begin(), s.ranks.end(),
            [](const RankInfo& x, const RankInfo& y) { return x.rank < y.rank; });
  Analysis a;
  a.world_size =
      opts.expected_world < 0 ? agreed_world_size(s.ranks, a.findings) : opts.expected_world;
  a.live = opts.live;
  a.unreachable = opts.unreachable;
  a.stall_after_s =
      opts.stall_after_s < 0 ? automatic_stall_s(s.ranks, opts.live) : opts.stall_after_s;
  note_dump_times(s.ranks, a);
  int highest = -1;
  for (const RankInfo& r : s.ranks) {
    a.ranks_with_dumps.push_back(r.rank);
    highest = std::max(highest, r.rank);
  }
  for (const UnreachableRank& u : opts.unreachable)
    a.world_size = std::max(a.world_size, u.rank + 1);
  a.host_names = s.hosts;
  a.rank_host.assign(std::max(a.world_size, highest + 1), -1);
  Ctx c{s, a, a.stall_after_s, std::vector<const RankInfo*>(a.rank_host.size(), nullptr)};
  for (const RankInfo& r : s.ranks) {
    a.rank_host[r.rank] = r.host;
    c.info[r.rank] = &r;
  }
  report_absent_ranks(a, opts.unreachable);
  report_wrapped_rings(s.ranks, a);
  for (auto& [id, g] : s.groups) {
    std::sort(g.members.begin(), g.members.end(),
              [](const Member& x, const Member& y) { return x.rank < y.rank; });
    analyze_collectives(c, g, a.findings);
    analyze_p2p(c, g, a.findings);
    analyze_stuck(c, g, a.findings);
  }
  note_last_arrivals(s, a);
  s_ = std::make_unique<State>();
  return a;
}

Analysis analyze(const std::vector<RankDump>& dumps, const AnalyzeOptions& options) {
  DumpFold fold;
  for (const RankDump& d : dumps) fold.add(d);
  return fold.analyze(options);
}

Analysis analyze(const std::vector<RankDump>& dumps, int expected_world) {
  AnalyzeOptions o;
  o.expected_world = expected_world;
  return analyze(dumps, o);
}

}  // namespace collie
