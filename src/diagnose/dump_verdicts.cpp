// The analyzer's findings and facts read as causes (dump_verdicts.h). Each finding is evidence
// for at most one verdict; ranks that only wait for a cause named elsewhere get none.
#include "diagnose/dump_verdicts.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace collie {
namespace {

using nlohmann::json;

std::vector<int> ints(const json& j) {
  return j.is_array() ? j.get<std::vector<int>>() : std::vector<int>{};
}

std::string secs(double s) { return s >= 0 ? fmt::format("{:.1f} s", s) : "an unknown time"; }

// "ranks 0-3, 5" while short, else "2,048 ranks" (for sets named only for context).
std::string some(const std::vector<int>& r) {
  const std::string w = rank_word(r);
  return w.size() <= 64 ? w : fmt::format("{} ranks", count_text(r.size()));
}

const char* is_are(const std::vector<int>& r) { return r.size() == 1 ? "is" : "are"; }

// A finding as one evidence line: its group and the first line of its message (the torch-shaped
// line tools and people know), with the next line for NOT_ALL_JOINED (who joined, who is missing).
std::string first_line(const Finding& f) {
  const size_t nl = f.message.find('\n');
  std::string line = f.message.substr(0, nl);
  if (f.kind == "NOT_ALL_JOINED" && nl != std::string::npos) {
    const size_t from = f.message.find_first_not_of(' ', nl + 1);
    const size_t end = f.message.find('\n', nl + 1);
    if (from != std::string::npos && from < end)
      line = fmt::format("{}; {}", line,
                         f.message.substr(from, end == std::string::npos ? end : end - from));
  }
  return f.pg_id.empty() ? line : fmt::format("group {}: {}", f.pg_id, line);
}

class Builder {
 public:
  Builder(const Analysis& a, std::string source) : a_(a), source_(std::move(source)) {}

  Verdict make(VerdictKind k, std::vector<int> ranks, std::string group, double confidence) {
    Verdict v;
    v.kind = k;
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    v.hosts = a_.hosts_of(ranks);
    v.ranks = std::move(ranks);
    v.group = std::move(group);
    v.confidence = confidence;
    v.source = source_;
    return v;
  }
  std::string who(const std::vector<int>& r) const { return who_text(a_, r); }
  const Analysis& a() const { return a_; }

 private:
  const Analysis& a_;
  std::string source_;
};

constexpr const char* kLookOutside =
    "see what they do outside communication: py-spy dump --pid or gdb -p on their hosts (a data "
    "loader, I/O, a checkpoint, a Python deadlock, a GPU kernel that never returns), or the "
    "debug server's /v1/stacks";

void dead_and_unreachable(Builder& b, Diagnosis& d) {
  for (const Finding& f : b.a().findings) {
    if (f.kind != "MISSING_DUMP") continue;
    Verdict v = b.make(VerdictKind::RankDead, f.culprits, "", 0.7);
    v.summary = fmt::format(
        "{} left no flight-recorder dump: {} died, or {} stopped (SIGSTOP, a hang that also "
        "blocks the dump thread) before the others' dump request reached {}",
        b.who(f.culprits), f.culprits.size() == 1 ? "the process" : "the processes",
        f.culprits.size() == 1 ? "was" : "were", f.culprits.size() == 1 ? "it" : "them");
    v.evidence.push_back(first_line(f));
    v.next_step =
        "check their exit status and log (the launcher's; collie launch prints how each rank "
        "ended) and dmesg on their hosts (OOM killer, GPU Xid); a process still there is hung: "
        "py-spy dump / gdb -p";
    d.verdicts.push_back(std::move(v));
  }
  // Live: nothing listening at its address means the process is gone; no answer, unknown.
  std::vector<int> refused, silent;
  std::string refused_why, silent_why;
  for (const UnreachableRank& u : b.a().unreachable) {
    const bool gone = u.why.find("refused") != std::string::npos;
    (gone ? refused : silent).push_back(u.rank);
    (gone ? refused_why : silent_why) = fmt::format("rank {}: {}", u.rank, u.why);
  }
  if (!refused.empty()) {
    Verdict v = b.make(VerdictKind::RankDead, refused, "", 0.8);
    v.summary = fmt::format("{}: nothing listens at {} debug server's address, the process is gone",
                            b.who(v.ranks), refused.size() == 1 ? "its" : "their");
    v.evidence.push_back(refused_why);
    v.next_step = "check how it ended (the launcher's exit status, its log, dmesg on its host)";
    d.verdicts.push_back(std::move(v));
  }
  if (!silent.empty()) {
    Verdict v = b.make(VerdictKind::Unreachable, silent, "", 0.7);
    v.summary = fmt::format(
        "{} did not answer: hung with {} server blocked (SIGSTOP, a stuck process), or a network "
        "problem between here and {}",
        b.who(v.ranks), silent.size() == 1 ? "its" : "their", silent.size() == 1 ? "it" : "them");
    v.evidence.push_back(silent_why);
    v.next_step =
        "on its host: is the process running (ps -o stat: T = stopped), what is it doing (py-spy "
        "dump, gdb -p); can this machine reach it (ping, the port)";
    d.verdicts.push_back(std::move(v));
  }
}

void mismatches(Builder& b, Diagnosis& d, std::set<std::pair<std::string, uint64_t>>& explained) {
  for (const Finding& f : b.a().findings) {
    const bool field = f.kind.size() > 9 &&
                       f.kind.compare(f.kind.size() - 9, 9, "_MISMATCH") == 0 &&
                       f.kind != "P2P_MISMATCH" && f.kind != "WORLD_SIZE_MISMATCH";
    const bool p2p = f.kind == "P2P_MISMATCH" || f.kind == "UNMATCHED_P2P";
    if (!field && !p2p) continue;
    explained.insert({f.pg_id, f.seq});
    Verdict v = b.make(VerdictKind::Mismatch, f.culprits, f.pg_id, 0.9);
    v.facts = f.facts;
    v.facts["seq"] = f.seq;
    if (field) {
      const std::vector<int> found = ints(f.facts["found_ranks"]),
                             expected = ints(f.facts["expected_ranks"]);
      // One rank against one: nothing tells which side is wrong.
      v.confidence = found.size() < expected.size() ? 0.95 : 0.5;
      v.summary =
          fmt::format("{} called collective #{} of group {} with {} {} where {} used {}",
                      b.who(found), f.seq, f.pg_id, f.facts.value("field", ""),
                      f.facts.value("found", ""), some(expected), f.facts.value("expected", ""));
      v.next_step = fmt::format(
          "fix the call on the named ranks: the code that issues collective #{} of group {} "
          "differs between ranks (a branch on the rank, a data-dependent shape); "
          "COLLIE_DEBUG=DETAIL stops at the first differing call with both sides' arguments",
          f.seq, f.pg_id);
    } else {
      v.confidence = 0.8;
      v.summary = first_line(f);
      v.next_step =
          "pair every send with a recv of the same size and dtype on its peer, in the same order; "
          "COLLIE_DEBUG=DETAIL checks each pair";
    }
    v.evidence.push_back(first_line(f));
    d.verdicts.push_back(std::move(v));
  }
}

// Candidates for the first hung group: a group that hangs because of a cause (not waiting for
// another hung group), how long it has waited, and in what.
struct HungGroup {
  std::string group;
  double waited_s = -1;
  std::string what;
};

void not_joined(Builder& b, Diagnosis& d, std::vector<HungGroup>& roots) {
  // The ranks blamed, by what they last did (one verdict per such set), with the groups waiting.
  struct Idle {
    std::vector<int> ranks;
    double idle_s = -1;
    std::vector<std::string> waiting;
    json groups = json::array();
  };
  std::map<std::tuple<std::string, std::string, uint64_t>, Idle> by_last;
  for (const Finding& f : b.a().findings) {
    if (f.kind != "NOT_ALL_JOINED" || !f.facts.is_object()) continue;
    if (f.facts.contains("late")) {
      // Reached the collective after the others had given up: it was busy elsewhere that long.
      const std::vector<int> late = ints(f.facts["late"]);
      Verdict v = b.make(VerdictKind::NotJoined, late, f.pg_id, 0.8);
      const double by = f.facts.value("by_s", -1.0);
      v.summary = fmt::format(
          "{} reached {} #{} of group {} {} after the first rank, when {} had already failed it: "
          "{} outside collectives that long",
          b.who(late), f.facts.value("op", ""), f.seq, f.pg_id, secs(by),
          some(ints(f.facts["gave_up"])), late.size() == 1 ? "it was" : "they were");
      v.facts = {{"op", f.facts["op"]}, {"seq", f.seq}, {"late_by_s", by}};
      v.evidence.push_back(first_line(f));
      v.next_step = kLookOutside;
      d.verdicts.push_back(std::move(v));
      roots.push_back({f.pg_id, by, fmt::format("{} #{}", f.facts.value("op", ""), f.seq)});
      continue;
    }
    const json& idle = f.facts["idle"];
    if (!idle.is_array() || idle.empty()) continue;
    const std::vector<int> joined = ints(f.facts["joined"]);
    const double waited = f.facts.value("waited_s", -1.0);
    roots.push_back({f.pg_id, waited, fmt::format("{} #{}", f.facts.value("op", ""), f.seq)});
    for (const json& x : idle) {
      Idle& i = by_last[{x.value("group", ""), x.value("op", ""), x.value("seq", uint64_t{0})}];
      const std::vector<int> r = ints(x["ranks"]);
      i.ranks.insert(i.ranks.end(), r.begin(), r.end());
      i.idle_s = std::max(i.idle_s, x.value("idle_s", -1.0));
      i.waiting.push_back(
          fmt::format("group {}: {} #{} joined by {}, waiting {}; {} never called it", f.pg_id,
                      f.facts.value("op", ""), f.seq, some(joined), secs(waited), rank_word(r)));
      i.groups.push_back({{"group", f.pg_id}, {"op", f.facts["op"]}, {"seq", f.seq}});
    }
  }
  for (auto& [last, i] : by_last) {
    const auto& [group, op, seq] = last;
    Verdict v = b.make(VerdictKind::NotJoined, i.ranks, "", i.idle_s >= 0 ? 0.9 : 0.7);
    const bool one = v.ranks.size() == 1;
    v.summary = fmt::format(
        "{} {} alive but outside collectives: {} last op was {} #{} of group {}, {} before {} "
        "dump{}; {} group{} wait{} for {}",
        b.who(v.ranks), is_are(v.ranks), one ? "its" : "their", op.empty() ? "none" : op, seq,
        group, i.idle_s >= 0 ? secs(i.idle_s) : "an unknown time (no dump time)",
        one ? "its" : "their", one ? "" : "s", i.waiting.size(), i.waiting.size() == 1 ? "" : "s",
        i.waiting.size() == 1 ? "s" : "", one ? "it" : "them");
    constexpr size_t kShown = 6;
    for (size_t k = 0; k < i.waiting.size() && k < kShown; ++k) v.evidence.push_back(i.waiting[k]);
    if (i.waiting.size() > kShown)
      v.evidence.push_back(fmt::format("... and {} more groups", i.waiting.size() - kShown));
    v.facts = {{"last_op", op},
               {"last_group", group},
               {"last_seq", seq},
               {"idle_s", i.idle_s},
               {"waiting_groups", i.groups}};
    v.next_step = kLookOutside;
    d.verdicts.push_back(std::move(v));
  }
}

// Groups whose missing ranks are blocked in another group that misses theirs: a cycle.
void deadlocks(Builder& b, Diagnosis& d, std::set<std::pair<std::string, uint64_t>>& explained,
               std::vector<HungGroup>& roots) {
  struct Node {
    const Finding* f;
    std::vector<std::pair<std::string, uint64_t>> waits_on;  // (group, seq)
  };
  std::map<std::pair<std::string, uint64_t>, Node> nodes;
  for (const Finding& f : b.a().findings) {
    if (f.kind != "NOT_ALL_JOINED" || !f.facts.is_object() || !f.facts.contains("elsewhere"))
      continue;
    Node& n = nodes[{f.pg_id, f.seq}];
    n.f = &f;
    for (const json& e : f.facts["elsewhere"])
      n.waits_on.emplace_back(e.value("group", ""), e.value("seq", uint64_t{0}));
  }
  std::set<std::pair<std::string, uint64_t>> done;
  for (const auto& [start, n0] : nodes) {
    if (done.count(start)) continue;
    // Follow the first edge that leads to a waiting group until a node repeats.
    std::vector<std::pair<std::string, uint64_t>> path = {start};
    std::set<std::pair<std::string, uint64_t>> on_path = {start};
    std::optional<size_t> cycle_at;
    while (!cycle_at) {
      const Node& n = nodes.at(path.back());
      auto next = std::find_if(n.waits_on.begin(), n.waits_on.end(),
                               [&](const auto& w) { return nodes.count(w) != 0; });
      if (next == n.waits_on.end()) break;
      if (on_path.count(*next)) {
        cycle_at = static_cast<size_t>(std::find(path.begin(), path.end(), *next) - path.begin());
        break;
      }
      path.push_back(*next);
      on_path.insert(*next);
    }
    for (const auto& p : path) done.insert(p);
    if (!cycle_at) continue;
    std::vector<int> ranks;
    std::vector<std::string> steps, groups;
    json cycle = json::array();
    double oldest = -1;
    for (size_t k = *cycle_at; k < path.size(); ++k) {
      const Finding& f = *nodes.at(path[k]).f;
      const auto& to = path[k + 1 < path.size() ? k + 1 : *cycle_at];
      std::vector<int> blocked;
      for (const json& e : f.facts["elsewhere"]) {
        if (e.value("group", "") == to.first && e.value("seq", uint64_t{0}) == to.second) {
          const std::vector<int> r = ints(e["ranks"]);
          blocked.insert(blocked.end(), r.begin(), r.end());
        }
      }
      std::sort(blocked.begin(), blocked.end());
      const std::vector<int> joined = ints(f.facts["joined"]);
      ranks.insert(ranks.end(), joined.begin(), joined.end());
      steps.push_back(fmt::format("{} wait in {} #{} of group {} for {}", some(joined),
                                  f.facts.value("op", ""), f.seq, f.pg_id, some(blocked)));
      groups.push_back(f.pg_id);
      cycle.push_back({{"group", f.pg_id},
                       {"op", f.facts["op"]},
                       {"seq", f.seq},
                       {"waiting", rank_ranges(joined)},
                       {"waiting_for", rank_ranges(blocked)}});
      explained.insert(path[k]);
      oldest = std::max(oldest, f.facts.value("waited_s", -1.0));
      roots.push_back({f.pg_id, f.facts.value("waited_s", -1.0),
                       fmt::format("{} #{}, in a deadlock", f.facts.value("op", ""), f.seq)});
    }
    Verdict v = b.make(VerdictKind::Deadlock, ranks, "", 0.9);
    std::string names;
    for (size_t k = 0; k < groups.size(); ++k)
      names += fmt::format("{}{}",
                           k == 0                   ? ""
                           : k + 1 == groups.size() ? " and "
                                                    : ", ",
                           groups[k]);
    std::string chain;
    for (size_t k = 0; k < steps.size(); ++k)
      chain += fmt::format("{}{}", k == 0 ? "" : "; ", steps[k]);
    v.summary = fmt::format(
        "groups {} were entered in conflicting orders: {}, each waiting for "
        "the next (for {})",
        names, chain, secs(oldest));
    v.facts = {{"cycle", cycle}};
    for (size_t k = *cycle_at; k < path.size(); ++k)
      v.evidence.push_back(first_line(*nodes.at(path[k]).f));
    v.next_step =
        "make every rank enter these groups' collectives in the same order (the order of the "
        "calls in the code that issues them); each group agrees with itself, so "
        "COLLIE_DEBUG=DETAIL cannot see this";
    d.verdicts.push_back(std::move(v));
  }
}

void stuck_inside(Builder& b, Diagnosis& d,
                  const std::set<std::pair<std::string, uint64_t>>& explained,
                  std::vector<HungGroup>& roots) {
  for (const Finding& f : b.a().findings) {
    if (f.kind != "STUCK") continue;
    if (f.facts.value("members_without_dump", false)) {
      // Waiting for a rank that left no dump (RANK_DEAD): that is what this group hangs on.
      roots.push_back({f.pg_id, f.facts.value("max_age_s", -1.0),
                       fmt::format("{} #{}, waiting for ranks without a dump",
                                   f.facts.value("op", ""), f.seq)});
    }
    if (!f.facts.value("all_joined", false)) continue;
    if (explained.count({f.pg_id, f.seq})) continue;
    Verdict v = b.make(VerdictKind::StuckInCollective, f.ranks, f.pg_id, 0.75);
    const double since = f.facts.value("max_age_s", -1.0);
    v.summary = fmt::format(
        "{} {} inside {} #{} of group {} for {}, and every rank of the group called it: the "
        "collective itself does not complete",
        b.who(f.ranks), is_are(f.ranks), f.facts.value("op", ""), f.seq, f.pg_id, secs(since));
    v.facts = {{"op", f.facts["op"]}, {"seq", f.seq}, {"since_s", since}};
    v.evidence.push_back(first_line(f));
    v.next_step =
        "look below the collective: the network between these ranks (collie probe / collie accept "
        "on their hosts, NCCL_DEBUG=INFO), GPU health (nvidia-smi, dmesg Xid); COLLIE_DEBUG=DETAIL "
        "rules out ranks that pass different arguments";
    roots.push_back({f.pg_id, since, fmt::format("{} #{}", f.facts.value("op", ""), f.seq)});
    d.verdicts.push_back(std::move(v));
  }
}

void stragglers(Builder& b, Diagnosis& d) {
  for (const Analysis::LastArrivals& l : b.a().last_arrivals) {
    if (l.ops < kStragglerMinOps || l.last < kStragglerShare * static_cast<double>(l.ops) ||
        l.median_margin_ms < kStragglerMinMs) {
      continue;
    }
    const double share = static_cast<double>(l.last) / static_cast<double>(l.ops);
    Verdict v = b.make(VerdictKind::Straggler, {l.rank}, "", std::min(0.95, share));
    v.summary = fmt::format(
        "{} arrives last at {:.0f}% of the collectives it is in ({} of {}), a median {:.1f} ms "
        "after the rank before it (at most {:.1f} ms)",
        b.who(v.ranks), 100 * share, l.last, l.ops, l.median_margin_ms, l.max_margin_ms);
    v.facts = {{"last", l.last},
               {"ops", l.ops},
               {"median_margin_ms", l.median_margin_ms},
               {"max_margin_ms", l.max_margin_ms}};
    v.evidence.push_back(
        "entry times of the flight-recorder entries (each rank's wall clock: across hosts, "
        "their skew counts)");
    v.next_step =
        "it is slow before each collective: its host's load (top -H), a slower CPU or GPU than its "
        "peers', its data loading; collie perf -I names the straggler per size";
    d.verdicts.push_back(std::move(v));
  }
}

}  // namespace

Diagnosis diagnose(const Analysis& a, const std::string& source) {
  Diagnosis d;
  d.sources.push_back(
      fmt::format("{}: {} of {} ranks", source, a.ranks_with_dumps.size(), a.world_size));
  Builder b(a, source);
  std::set<std::pair<std::string, uint64_t>> explained;  // (group, seq) a cause accounts for
  std::vector<HungGroup> roots;
  dead_and_unreachable(b, d);
  mismatches(b, d, explained);
  deadlocks(b, d, explained, roots);
  not_joined(b, d, roots);
  stuck_inside(b, d, explained, roots);
  stragglers(b, d);
  d.order();
  // The first hung group: among those hung by a cause, the one waiting longest.
  std::set<std::string> hung;
  for (const Finding& f : a.findings) {
    if (f.kind == "STUCK" || f.kind == "NOT_ALL_JOINED") hung.insert(f.pg_id);
  }
  if (!roots.empty()) {
    auto first = std::max_element(roots.begin(), roots.end(), [](const auto& x, const auto& y) {
      return x.waited_s != y.waited_s ? x.waited_s < y.waited_s : x.group > y.group;
    });
    d.first_hung_group = first->group;
    d.first_hung_why =
        fmt::format("{}, waiting {}; {} group{} hang{} in all", first->what, secs(first->waited_s),
                    hung.size(), hung.size() == 1 ? "" : "s", hung.size() == 1 ? "s" : "");
  }
  return d;
}

}  // namespace collie
