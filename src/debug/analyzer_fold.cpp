// DumpFold::add: one rank's dump folded into the summary of analyzer_fold.h. Each entry costs a
// few hash lookups of short strings and a step along its group's seq map (a rank's collectives
// of one group are visited in seq order, so the next seq is next in the map); nothing per entry
// is kept when the ranks agree.
#include "debug/analyzer_fold.h"

#include <algorithm>
#include <string_view>

namespace collie {
namespace fold {

void RankRuns::add(int r) {
  if (runs_.empty() || r > runs_.back().second + 1) {
    runs_.emplace_back(r, r);
  } else if (r == runs_.back().second + 1) {
    ++runs_.back().second;
  } else {
    // Out of order: the first run that ends at r - 1 or later.
    auto it =
        std::lower_bound(runs_.begin(), runs_.end(), r,
                         [](const std::pair<int, int>& run, int v) { return run.second < v - 1; });
    if (it->first <= r && r <= it->second) return;  // already in
    if (it->second == r - 1) {
      it->second = r;
      auto next = std::next(it);
      if (next != runs_.end() && next->first == r + 1) {
        it->second = next->second;
        runs_.erase(next);
      }
    } else if (it->first == r + 1) {
      it->first = r;
    } else {
      runs_.insert(it, {r, r});
    }
  }
  ++count_;
}

std::vector<int> RankRuns::ranks() const {
  std::vector<int> out;
  append_to(out);
  return out;
}

void RankRuns::append_to(std::vector<int>& out) const {
  out.reserve(out.size() + count_);
  for (const auto& [lo, hi] : runs_) {
    for (int r = lo; r <= hi; ++r) out.push_back(r);
  }
}

void LastArrivals::add(const SeqAgg& agg) {
  if (agg.count() < 2 || agg.latest.size() < 2) return;
  std::vector<SeqAgg::Arrival> top = agg.latest;
  std::partial_sort(top.begin(), top.begin() + 2, top.end(),
                    [](const auto& x, const auto& y) { return x.created > y.created; });
  Last& l = by_rank[top[0].rank];
  ++l.count;
  l.margins_ms.push_back(static_cast<double>(top[0].created - top[1].created) / 1e6);
  for (const SeqAgg::Variant& v : agg.variants) {
    for (const auto& run : v.ranks.runs()) ++runs[run];
  }
}

size_t SeqAgg::count() const {
  size_t n = 0;
  for (const Variant& v : variants) n += v.ranks.count();
  return n;
}

const SeqAgg::Variant& SeqAgg::first() const {
  const Variant* best = &variants.front();
  for (const Variant& v : variants) {
    if (v.ranks.lowest() < best->ranks.lowest()) best = &v;
  }
  return *best;
}

const Member* GroupAgg::member(int rank) const {
  auto it = std::lower_bound(members.begin(), members.end(), rank,
                             [](const Member& m, int r) { return m.rank < r; });
  return it != members.end() && it->rank == rank ? &*it : nullptr;
}

namespace {

// Seconds `e` had existed when its rank dumped at `at`; unknown times (and a time after the dump:
// the rank's clock stepped back) count as old enough.
double age_s(int64_t at, const DumpEntry& e) {
  if (at == 0 || e.time_created_ns == 0 || e.time_created_ns > at) return kUnknownAge;
  return (static_cast<double>(at) - static_cast<double>(e.time_created_ns)) / 1e9;
}

bool later(const SeqAgg::Arrival& a, const SeqAgg::Arrival& b) { return a.created > b.created; }

void fold_entry(DumpFold::State& s, SeqAgg& a, int rank, int64_t dump_time, const DumpEntry& e) {
  const uint32_t op = s.strings.id(e.op), sizes = s.strings.id(e.sizes),
                 dtypes = s.strings.id(e.dtypes);
  auto v = std::find_if(a.variants.begin(), a.variants.end(), [&](const SeqAgg::Variant& x) {
    return x.op == op && x.sizes == sizes && x.dtypes == dtypes && x.root == e.root;
  });
  if (v == a.variants.end()) {
    a.variants.push_back(
        SeqAgg::Variant{.op = op, .sizes = sizes, .dtypes = dtypes, .root = e.root});
    v = std::prev(a.variants.end());
  }
  v->ranks.add(rank);
  const double age = age_s(dump_time, e);
  a.max_age = std::max(a.max_age, age);
  if (e.failed || e.state != "completed") {
    a.open = true;
    a.max_open_age = std::max(a.max_open_age, age);
  }
  if (e.time_created_ns > 0 && (a.first_created == 0 || e.time_created_ns < a.first_created))
    a.first_created = e.time_created_ns;
  const SeqAgg::Arrival arrival{rank, e.time_created_ns, e.time_completed_ns};
  if (e.failed) a.failed.push_back(arrival);
  if (e.time_created_ns == 0) return;
  // The latest arrivals: a min-heap whose top is the earliest kept.
  if (a.latest.size() < kKeptArrivals) {
    a.latest.push_back(arrival);
    std::push_heap(a.latest.begin(), a.latest.end(), later);
  } else if (e.time_created_ns > a.latest.front().created) {
    std::pop_heap(a.latest.begin(), a.latest.end(), later);
    a.latest.back() = arrival;
    std::push_heap(a.latest.begin(), a.latest.end(), later);
  }
}

// Every rank of the group recorded it (and no other rank names the group), all completed, none
// failed, all alike: nothing for a check to find.
bool retirable(const GroupAgg& g, const SeqAgg& a) {
  return !a.open && a.failed.empty() && a.variants.size() == 1 && g.size >= 2 &&
         g.members.size() == g.size && a.count() == g.size;
}

RankInfo rank_info(DumpFold::State& s, const RankDump& d) {
  RankInfo info{.rank = d.rank,
                .world_size = d.world_size,
                .wrapped = d.wrapped,
                .requested = d.trigger == "request",
                .buffer_size = d.buffer_size,
                .total_recorded = d.total_recorded,
                .dump_time_ns = d.dump_time_ns};
  int64_t last = 0;
  auto busy_in = [&](const DumpEntry& e) {
    info.busy = true;
    info.busy_group = s.strings.id(e.pg_id);
    info.busy_op = s.strings.id(e.op);
    info.busy_state = s.strings.id(e.failed ? "failed" : e.state);
    info.busy_seq = e.is_p2p ? e.p2p_seq_id : e.collective_seq_id;
  };
  for (const DumpEntry& e : d.entries) {
    if (!info.busy && e.state != "completed") busy_in(e);
    last = std::max({last, e.time_created_ns, e.time_started_ns, e.time_completed_ns});
    if (d.dump_time_ns != 0 && e.time_created_ns > d.dump_time_ns) {
      ++info.stepped;
      info.stepped_by_ns = std::max(info.stepped_by_ns, e.time_created_ns - d.dump_time_ns);
    }
  }
  if (!d.entries.empty()) {
    const DumpEntry& e = d.entries.back();
    if (!info.busy && e.failed) busy_in(e);
    info.newest_group = s.strings.id(e.pg_id);
    info.newest_op = s.strings.id(e.op);
    info.newest_seq = e.is_p2p ? e.p2p_seq_id : e.collective_seq_id;
  }
  if (d.dump_time_ns != 0 && last != 0 && last <= d.dump_time_ns)
    info.idle_s = static_cast<double>(d.dump_time_ns - last) / 1e9;
  if (!d.host.empty()) {
    auto [it, fresh] = s.host_ids.try_emplace(d.host, static_cast<int32_t>(s.hosts.size()));
    if (fresh) s.hosts.push_back(d.host);
    info.host = it->second;
  }
  return info;
}

}  // namespace
}  // namespace fold

DumpFold::DumpFold() : s_(std::make_unique<State>()) {}
DumpFold::~DumpFold() = default;

bool DumpFold::has(int rank) const {
  return rank >= 0 && static_cast<size_t>(rank) < s_->seen.size() && s_->seen[rank];
}

size_t DumpFold::size() const { return s_->ranks.size(); }

size_t DumpFold::collectives_held() const {
  size_t n = 0;
  for (const auto& [id, g] : s_->groups) n += g.seqs.size();
  return n;
}

bool DumpFold::add(const RankDump& d) {
  using namespace fold;
  State& s = *s_;
  if (d.rank < 0 || has(d.rank)) return false;
  if (s.seen.size() <= static_cast<size_t>(d.rank)) s.seen.resize(d.rank + 1);
  s.seen[d.rank] = true;
  s.ranks.push_back(rank_info(s, d));
  // The rank's groups, and its place in each.
  struct Local {
    GroupAgg* g;
    size_t member;
  };
  std::unordered_map<std::string_view, Local> local;
  for (const auto& [id, g] : d.groups) {
    GroupAgg& agg = s.groups[id];
    if (agg.pg_id.empty()) {
      agg.pg_id = id;
      agg.desc = g.desc;
      agg.size = g.ranks.size();
    }
    agg.members.push_back(
        Member{.rank = d.rank, .wrapped = d.wrapped, .last_completed = g.last_completed});
    local.emplace(id, Local{&agg, agg.members.size() - 1});
  }
  // Collectives by (group, seq); a seq recorded twice keeps the later entry.
  struct Coll {
    const Local* at;
    uint64_t seq;
    size_t index;
  };
  std::vector<Coll> coll;
  coll.reserve(d.entries.size());
  for (size_t i = 0; i < d.entries.size(); ++i) {
    const DumpEntry& e = d.entries[i];
    auto it = local.find(e.pg_id);
    if (it == local.end()) continue;  // parse_dump refuses such dumps
    if (!e.is_p2p) {
      coll.push_back({&it->second, e.collective_seq_id, i});
      continue;
    }
    if (e.op != "send" && e.op != "recv") continue;
    it->second.g->members[it->second.member].p2p.push_back(P2p{.peer = e.peer,
                                                               .send = e.op == "send",
                                                               .sizes = s.strings.id(e.sizes),
                                                               .dtypes = s.strings.id(e.dtypes),
                                                               .state = s.strings.id(e.state),
                                                               .age = age_s(d.dump_time_ns, e)});
  }
  std::sort(coll.begin(), coll.end(), [](const Coll& a, const Coll& b) {
    return a.at != b.at ? a.at < b.at : a.seq != b.seq ? a.seq < b.seq : a.index < b.index;
  });
  for (size_t i = 0; i < coll.size();) {
    GroupAgg& g = *coll[i].at->g;
    Member& m = g.members[coll[i].at->member];
    auto hint = g.seqs.lower_bound(coll[i].seq);
    for (; i < coll.size() && coll[i].at->g == &g; ++i) {
      if (i + 1 < coll.size() && coll[i + 1].at == coll[i].at && coll[i + 1].seq == coll[i].seq)
        continue;  // the later entry of this seq follows
      const uint64_t seq = coll[i].seq;
      const DumpEntry& e = d.entries[coll[i].index];
      while (hint != g.seqs.end() && hint->first < seq) ++hint;
      if (hint == g.seqs.end() || hint->first != seq)
        hint = g.seqs.emplace_hint(hint, seq, SeqAgg{});
      fold_entry(s, hint->second, d.rank, d.dump_time_ns, e);
      const bool retire = retirable(g, hint->second);
      // A failed op is one the rank gave up waiting in: as if still in flight (PyTorch's dumps,
      // which record no failure, show it so), named "failed".
      const uint32_t state = s.strings.id(e.failed ? "failed" : e.state);
      m.has_coll = true;
      m.last_seq = seq;
      m.last_op = s.strings.id(e.op);
      m.last_state = state;
      if (!m.has_open && state != s.completed) {
        m.has_open = true;
        m.open_seq = seq;
        m.open_op = m.last_op;
        m.open_state = state;
        m.open_age = age_s(d.dump_time_ns, e);
      }
      if (retire) {
        s.retired.add(hint->second);
        hint = g.seqs.erase(hint);
      }
    }
  }
  return true;
}

}  // namespace collie
