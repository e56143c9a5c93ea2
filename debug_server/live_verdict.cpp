#include "debug_server/live_verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "core/printable.h"

namespace collie {
namespace {

using json = nlohmann::json;

constexpr size_t kShownPlaces = 5;   // per group line; the rest are counted
constexpr size_t kShownGroups = 12;  // group lines in the text; the rest are counted
constexpr size_t kShownFindings = 20;

std::string seconds(double lo, double hi) {
  if (hi - lo < 0.05) return fmt::format("for {:.1f} s", hi);
  return fmt::format("for {:.1f}-{:.1f} s", lo, hi);
}

std::string op_or(const std::string& op, const char* otherwise) {
  return op.empty() ? otherwise : op;
}

// Where a bucket's ranks are: "in all_reduce #812 for 41.9 s", "idle after all_reduce #811 ...".
std::string place(const LiveBucket& b) {
  if (b.mixed) return fmt::format("at collective #{} or later (several places)", b.position());
  if (!b.idle() && b.inflight_p2p) {
    return fmt::format("in {} (p2p #{}) {}, after collective #{}", b.inflight_op, b.inflight_seq,
                       seconds(b.age_min_s, b.age_max_s), b.last_completed);
  }
  if (!b.idle()) {
    return fmt::format("in {} #{} {}", b.inflight_op, b.inflight_seq,
                       seconds(b.age_min_s, b.age_max_s));
  }
  if (b.last_completed == 0) {
    return fmt::format("idle before their first collective, {}",
                       seconds(b.idle_min_s, b.idle_max_s));
  }
  return fmt::format("idle after {} #{} {}", op_or(b.last_completed_op, "collective"),
                     b.last_completed, seconds(b.idle_min_s, b.idle_max_s));
}

const char* verb(int64_t n) { return n == 1 ? "is" : "are"; }

std::string hosts_text(const std::vector<std::string>& hosts, bool truncated) {
  if (hosts.empty()) return "";
  std::string h = compress_hosts(hosts);
  if (truncated) h += " and others";
  return h;
}

struct Union {
  RankRanges ranks;
  std::vector<std::string> hosts;
  bool hosts_truncated = false;
  void add(const LiveBucket& b) {
    ranks.merge(b.ranks);
    hosts.insert(hosts.end(), b.hosts.begin(), b.hosts.end());
    hosts_truncated = hosts_truncated || b.hosts_truncated;
  }
  std::string str() const { return describe_ranks(ranks, hosts, hosts_truncated); }
};

std::string group_name(const LiveGroup& g) {
  return g.desc.empty() ? fmt::format("group {}", g.pg)
                        : fmt::format("group {} ({})", g.pg, g.desc);
}

int64_t members(const LiveGroup& g) {
  int64_t n = 0;
  for (const LiveBucket& b : g.buckets) n += b.ranks.count();
  return n;
}

uint64_t front_position(const LiveGroup& g) {
  uint64_t p = 0;
  for (const LiveBucket& b : g.buckets) p = std::max(p, b.position());
  return p;
}

std::string group_line(const LiveGroup& g) {
  const int64_t n = members(g);
  std::string head = fmt::format("{}: {} of {} members answered", group_name(g), with_commas(n),
                                 with_commas(g.size));
  if (g.buckets.size() == 1) {
    return fmt::format("{}; {} {}", head, n == 1 ? "it is" : "all " + with_commas(n) + " are",
                       place(g.buckets[0]));
  }
  // Behind first (lowest position), the front last as "the other N".
  const uint64_t p = front_position(g);
  std::vector<const LiveBucket*> behind, front;
  for (const LiveBucket& b : g.buckets) (b.position() < p ? behind : front).push_back(&b);
  std::string out = head;
  int64_t shown = 0;
  size_t listed = 0;
  for (const LiveBucket* b : behind) {
    if (listed == kShownPlaces) break;
    out += fmt::format("; {} {} {}", describe_ranks(b->ranks, b->hosts, b->hosts_truncated),
                       verb(b->ranks.count()), place(*b));
    shown += b->ranks.count();
    ++listed;
  }
  if (listed < behind.size()) {
    int64_t more = 0;
    for (size_t i = listed; i < behind.size(); ++i) more += behind[i]->ranks.count();
    out += fmt::format("; {} more behind at {} other places", with_commas(more),
                       behind.size() - listed);
    shown += more;
  }
  const int64_t rest = n - shown;
  if (front.size() == 1) {
    out += fmt::format("; the other {} {} {}", with_commas(rest), verb(rest), place(*front[0]));
  } else {
    out += fmt::format("; the other {} reached collective #{}:", with_commas(rest), p);
    for (size_t i = 0; i < front.size(); ++i) {
      out += fmt::format("{} {} {}", i == 0 ? "" : ",", with_commas(front[i]->ranks.count()),
                         place(*front[i]));
    }
  }
  return out;
}

// A group whose answering members all wait in one collective, none behind. Many groups in the
// same state (one per host, say) become one finding.
struct Stuck {
  const LiveGroup* g;
  std::string op;
  uint64_t seq;
  double age;
  Union front;
};

void judge_group(const LiveGroup& g, double stall, std::vector<LiveFinding>& out,
                 std::vector<Stuck>& stuck_groups) {
  // Different collectives at one sequence number: the less common ops' ranks are the culprits.
  std::map<uint64_t, std::map<std::string, Union>> at_seq;
  for (const LiveBucket& b : g.buckets) {
    if (!b.idle() && !b.inflight_p2p && !b.mixed) at_seq[b.inflight_seq][b.inflight_op].add(b);
  }
  bool mismatch_at_front = false;
  const uint64_t p = front_position(g);
  for (const auto& [seq, ops] : at_seq) {
    if (ops.size() < 2) continue;
    mismatch_at_front = mismatch_at_front || seq == p;
    auto common = std::max_element(ops.begin(), ops.end(), [](const auto& a, const auto& b) {
      return a.second.ranks.count() < b.second.ranks.count();
    });
    for (const auto& [op, u] : ops) {
      if (&u == &common->second) continue;
      out.push_back(LiveFinding{
          .kind = "COLLECTIVE_TYPE_MISMATCH",
          .pg = g.pg,
          .culprit = true,
          .ranks = u.ranks,
          .hosts = hosts_text(u.hosts, u.hosts_truncated),
          .message = fmt::format("{}: {} {} in {} #{} where the other {} {} in {} #{}: the ranks "
                                 "called different collectives (a desync; COLLIE_DEBUG=DETAIL "
                                 "names the call sites)",
                                 group_name(g), u.str(), verb(u.ranks.count()), op, seq,
                                 with_commas(common->second.ranks.count()),
                                 verb(common->second.ranks.count()), common->first, seq)});
    }
  }
  // The front: the ranks that reached the furthest collective; only a front that has waited in
  // it for `stall` makes the ranks behind a problem (live ranks are always a moment apart).
  double front_age = 0;
  std::string front_op;
  Union front;
  for (const LiveBucket& b : g.buckets) {
    if (b.position() != p) continue;
    front.add(b);
    if (!b.idle() && !b.inflight_p2p && b.inflight_seq == p) {
      front_age = std::max(front_age, b.age_max_s);
      if (front_op.empty()) front_op = b.inflight_op;
    }
  }
  if (front_op.empty() || front_age < stall || mismatch_at_front) return;
  Union stuck, moving;
  for (const LiveBucket& b : g.buckets) {
    if (b.position() >= p) continue;
    const bool still = b.idle() ? b.idle_min_s >= stall : b.age_min_s >= stall;
    (still ? stuck : moving).add(b);
  }
  const std::string waiting =
      fmt::format("the other {} {} waiting in it for up to {:.1f} s",
                  with_commas(front.ranks.count()), verb(front.ranks.count()), front_age);
  if (!stuck.ranks.empty()) {
    out.push_back(LiveFinding{
        .kind = "NOT_JOINED",
        .pg = g.pg,
        .culprit = true,
        .ranks = stuck.ranks,
        .hosts = hosts_text(stuck.hosts, stuck.hosts_truncated),
        .message =
            fmt::format("{}: {} {} not joined {} #{} and made no progress for {:.0f} s; "
                        "{} (look at what they are doing: /v1/stacks, py-spy)",
                        group_name(g), stuck.str(), stuck.ranks.count() == 1 ? "has" : "have",
                        front_op, p, stall, waiting)});
  }
  if (!moving.ranks.empty()) {
    out.push_back(LiveFinding{
        .kind = "STRAGGLING",
        .pg = g.pg,
        .ranks = moving.ranks,
        .hosts = hosts_text(moving.hosts, moving.hosts_truncated),
        .message = fmt::format("{}: {} {} behind {} #{} but still moving (progress within {:.0f} "
                               "s); {}",
                               group_name(g), moving.str(), verb(moving.ranks.count()), front_op, p,
                               stall, waiting)});
  }
  if (stuck.ranks.empty() && moving.ranks.empty()) {
    stuck_groups.push_back(Stuck{&g, front_op, p, front_age, front});
  }
}

// "group 3 (tp)", "groups 1-256, 300 (tp)": pg ids that are numbers as ranges.
std::string groups_name(const std::vector<const LiveGroup*>& gs) {
  if (gs.size() == 1) return group_name(*gs[0]);
  RankRanges ids;
  std::vector<std::string> other;
  for (const LiveGroup* g : gs) {
    const bool number = !g->pg.empty() && g->pg.size() < 10 &&
                        g->pg.find_first_not_of("0123456789") == std::string::npos;
    if (number) {
      ids.add(std::stoi(g->pg));
    } else if (other.size() < 4) {
      other.push_back(g->pg);
    }
  }
  std::string list = ids.empty() ? "" : ids.str(4);
  for (const std::string& o : other) list += (list.empty() ? "" : ", ") + o;
  return fmt::format("{} groups {}{}", with_commas(static_cast<int64_t>(gs.size())), list,
                     gs[0]->desc.empty() ? "" : " (" + gs[0]->desc + ")");
}

void add_stuck(std::vector<Stuck>& all, std::vector<LiveFinding>& out) {
  // One finding per (desc, op, seq, whether members are missing).
  std::map<std::tuple<std::string, std::string, uint64_t, bool>, std::vector<const Stuck*>> by;
  for (const Stuck& x : all) {
    by[{x.g->desc, x.op, x.seq, members(*x.g) < x.g->size}].push_back(&x);
  }
  for (const auto& [key, xs] : by) {
    Union u;
    std::vector<const LiveGroup*> gs;
    double age = 0;
    int64_t absent = 0;
    for (const Stuck* x : xs) {
      u.ranks.merge(x->front.ranks);
      u.hosts.insert(u.hosts.end(), x->front.hosts.begin(), x->front.hosts.end());
      u.hosts_truncated = u.hosts_truncated || x->front.hosts_truncated;
      gs.push_back(x->g);
      age = std::max(age, x->age);
      absent += x->g->size - members(*x->g);
    }
    out.push_back(LiveFinding{
        .kind = "STUCK",
        .pg = gs.size() == 1 ? gs[0]->pg : "",
        .ranks = u.ranks,
        .hosts = hosts_text(u.hosts, u.hosts_truncated),
        .message = fmt::format(
            "{}: every answering member ({}) waits in {} #{} for up to {:.1f} s "
            "and none is behind{}",
            groups_name(gs), with_commas(u.ranks.count()), std::get<1>(key), std::get<2>(key), age,
            std::get<3>(key) ? fmt::format("; {} {} not answer: look at {}", with_commas(absent),
                                           absent == 1 ? "member did" : "members did",
                                           absent == 1 ? "it" : "them")
                             : ": look at the network or the backend (/v1/stacks)")});
  }
}

void judge_missing(const LiveMissing& m, std::vector<LiveFinding>& out) {
  const std::string who = describe_ranks(m.ranks, m.hosts, m.hosts_truncated);
  const int64_t n = m.ranks.count();
  const char* first = n > 1 ? ", for the first of them" : "";
  LiveFinding f{.ranks = m.ranks, .hosts = hosts_text(m.hosts, m.hosts_truncated)};
  if (m.kind == "no_answer" || m.kind == "error") {
    f.kind = "UNREACHABLE";
    f.culprit = true;
    f.message = fmt::format(
        "{} did not answer ({}{}): the process{} died, hang{} with the debug server blocked, or "
        "the host is down; check {} log and host",
        who, m.example, first, n > 1 ? "es" : "", n > 1 ? "" : "s", n > 1 ? "their" : "its");
  } else if (m.kind == "no_address") {
    f.kind = "NO_ADDRESS";
    f.culprit = true;
    f.message = fmt::format(
        "{} published no debug-server address ({}{}): never started one (COLLIE_DEBUG_PORT on "
        "every rank?) or died first",
        who, m.example, first);
  } else {
    f.kind = "NOT_REACHED";
    f.message = fmt::format("{} {} not asked ({}{}): state unknown", who, n == 1 ? "was" : "were",
                            m.example, first);
  }
  out.push_back(std::move(f));
}

}  // namespace

std::string describe_ranks(const RankRanges& r, const std::vector<std::string>& hosts,
                           bool hosts_truncated) {
  std::string s = r.count() == 1 && !r.ranges().empty()
                      ? fmt::format("rank {}", r.ranges()[0].first)
                      : fmt::format("ranks {}", r.str());
  const std::string h = hosts_text(hosts, hosts_truncated);
  if (!h.empty()) {
    std::vector<std::string> unique(hosts);
    std::sort(unique.begin(), unique.end());
    unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
    s += fmt::format(" on host{} {}", unique.size() == 1 && !hosts_truncated ? "" : "s", h);
  }
  return s;
}

LiveReport judge_live(const LiveSummary& s, double stall_after_s) {
  LiveReport r;
  r.world_size = s.world_size;
  r.stall_after_s = stall_after_s;
  std::vector<Stuck> stuck;
  for (const LiveGroup& g : s.groups) {
    r.groups.push_back(group_line(g));
    judge_group(g, stall_after_s, r.findings, stuck);
  }
  add_stuck(stuck, r.findings);
  for (const LiveMissing& m : s.missing) judge_missing(m, r.findings);
  for (const LiveFinding& f : r.findings) {
    if (f.culprit) r.culprits.merge(f.ranks);
  }
  if (r.findings.empty()) {
    r.summary = fmt::format("all {} ranks in step", with_commas(s.world_size));
  } else if (r.culprits.empty()) {
    r.summary = fmt::format("no culprit named ({})", r.findings.front().kind);
  } else {
    r.summary = fmt::format("culprit {} ({})", describe_ranks(r.culprits, {}, false),
                            r.findings.front().kind);
    for (const LiveFinding& f : r.findings) {
      if (f.culprit) {
        r.summary = fmt::format("culprit {} ({}{})", describe_ranks(r.culprits, {}, false), f.kind,
                                f.pg.empty() ? "" : " in group " + f.pg);
        break;
      }
    }
  }
  return r;
}

std::string live_text(const LiveReport& r, const LiveSummary& s) {
  std::string out = fmt::format(
      "collie analyze --live: {} of {} ranks answered ({}) in {:.3f} s, a tree of {} level{} "
      "({} status requests)\n",
      with_commas(s.answered.count()), with_commas(s.world_size), s.answered.str(), r.elapsed_s,
      s.levels, s.levels == 1 ? "" : "s", with_commas(s.requests));
  // Groups whose members are all at one place collapse by that place (one line for all the
  // per-host groups of a job); the others keep their line.
  std::map<std::tuple<std::string, int, std::string>, std::vector<const LiveGroup*>> same;
  std::vector<std::string> lines;
  for (size_t i = 0; i < s.groups.size(); ++i) {
    const LiveGroup& g = s.groups[i];
    if (g.pg != "0" && g.buckets.size() == 1 && members(g) == g.size) {
      same[{g.desc, g.size, place(g.buckets[0])}].push_back(&g);
    } else {
      lines.push_back(r.groups[i]);
    }
  }
  for (const auto& [key, gs] : same) {
    if (gs.size() == 1) {
      lines.push_back(group_line(*gs[0]));
      continue;
    }
    lines.push_back(fmt::format("{}, {} members each: all are {}", groups_name(gs),
                                with_commas(std::get<1>(key)), std::get<2>(key)));
  }
  for (size_t i = 0; i < lines.size() && i < kShownGroups; ++i) out += "- " + lines[i] + "\n";
  if (lines.size() > kShownGroups) {
    out += fmt::format("- ... {} more lines of groups (--json lists every group)\n",
                       lines.size() - kShownGroups);
  }
  if (s.groups_omitted > 0) out += fmt::format("- {} more groups not shown\n", s.groups_omitted);
  if (r.findings.empty()) {
    return out + fmt::format(
                     "No problem found: all {} ranks in step (ops in flight under {:.1f} s are "
                     "not counted; --stall to change).\n",
                     with_commas(s.world_size), r.stall_after_s);
  }
  for (size_t i = 0; i < r.findings.size() && i < kShownFindings; ++i) {
    out += fmt::format("{}: {}\n", r.findings[i].kind, r.findings[i].message);
  }
  if (r.findings.size() > kShownFindings) {
    out += fmt::format("... {} more findings (--json lists them)\n",
                       r.findings.size() - kShownFindings);
  }
  out += r.culprits.empty() ? std::string("No culprit rank identified.\n")
                            : fmt::format("Culprit {}.\n", describe_ranks(r.culprits, {}, false));
  return printable_lines(out);
}

json ranks_value(const RankRanges& r) {
  json ranges = json::array();
  for (const auto& [a, b] : r.ranges()) ranges.push_back({a, b});
  return {{"count", r.count()},
          {"text", r.str()},
          {"ranges", std::move(ranges)},
          {"truncated", r.truncated()}};
}

json live_json(const LiveReport& r, const LiveSummary& s) {
  json missing = json::array();
  for (const LiveMissing& m : s.missing) {
    missing.push_back({{"kind", m.kind},
                       {"ranks", ranks_value(m.ranks)},
                       {"hosts", hosts_text(m.hosts, m.hosts_truncated)},
                       {"why", m.example}});
  }
  json groups = json::array();
  for (size_t i = 0; i < s.groups.size(); ++i) {
    const LiveGroup& g = s.groups[i];
    json places = json::array();
    for (const LiveBucket& b : g.buckets) {
      places.push_back({{"ranks", ranks_value(b.ranks)},
                        {"hosts", hosts_text(b.hosts, b.hosts_truncated)},
                        {"state", b.mixed    ? "mixed"
                                  : b.idle() ? "idle"
                                             : "in_flight"},
                        {"op", b.inflight_op},
                        {"seq", b.inflight_seq},
                        {"p2p", b.inflight_p2p},
                        {"last_completed_seq", b.last_completed},
                        {"last_completed_op", b.last_completed_op},
                        {"age_s", {b.age_min_s, b.age_max_s}},
                        {"idle_s", {b.idle_min_s, b.idle_max_s}},
                        {"text", place(b)}});
    }
    groups.push_back({{"pg", g.pg},
                      {"desc", g.desc},
                      {"size", g.size},
                      {"answered", members(g)},
                      {"text", r.groups.at(i)},
                      {"places", std::move(places)}});
  }
  json findings = json::array();
  for (const LiveFinding& f : r.findings) {
    findings.push_back({{"kind", f.kind},
                        {"pg", f.pg},
                        {"culprit", f.culprit},
                        {"ranks", ranks_value(f.ranks)},
                        {"hosts", f.hosts},
                        {"message", f.message}});
  }
  return {{"world_size", s.world_size},
          {"live", true},
          {"stall_after_s", r.stall_after_s},
          {"elapsed_s", r.elapsed_s},
          {"levels", s.levels},
          {"requests", s.requests},
          {"answered", ranks_value(s.answered)},
          {"missing", std::move(missing)},
          {"groups", std::move(groups)},
          {"groups_omitted", s.groups_omitted},
          {"findings", std::move(findings)},
          {"culprits", ranks_value(r.culprits)},
          {"summary", r.summary}};
}

}  // namespace collie
