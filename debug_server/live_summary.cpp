#include "debug_server/live_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "comm/op.h"
#include "core/printable.h"

namespace collie {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxText = 200;  // a name, an op, a reason from another rank
constexpr const char* kKinds[] = {"no_answer", "error", "no_address", "not_reached"};

int kind_order(const std::string& k) {
  for (int i = 0; i < 4; ++i) {
    if (k == kKinds[i]) return i;
  }
  return -1;
}

std::string clip(const std::string& s) { return printable(s.substr(0, kMaxText)); }

auto bucket_key(const LiveBucket& b) {
  return std::make_tuple(b.position(), b.last_completed, b.inflight_seq, b.inflight_p2p,
                         b.inflight_op);
}

bool same_place(const LiveBucket& a, const LiveBucket& b) {
  return !a.mixed && !b.mixed && bucket_key(a) == bucket_key(b);
}

void merge_hosts(std::vector<std::string>& into, bool& truncated,
                 const std::vector<std::string>& from, bool from_truncated) {
  std::vector<std::string> out;
  out.reserve(into.size() + from.size());
  std::set_union(into.begin(), into.end(), from.begin(), from.end(), std::back_inserter(out));
  truncated = truncated || from_truncated;
  if (out.size() > kMaxBucketHosts) {
    out.resize(kMaxBucketHosts);
    truncated = true;
  }
  into = std::move(out);
}

void merge_bucket(LiveBucket& into, const LiveBucket& b) {
  const bool first = into.ranks.empty();
  into.ranks.merge(b.ranks);
  merge_hosts(into.hosts, into.hosts_truncated, b.hosts, b.hosts_truncated);
  if (first) {
    into.age_min_s = b.age_min_s;
    into.age_max_s = b.age_max_s;
    into.idle_min_s = b.idle_min_s;
    into.idle_max_s = b.idle_max_s;
    into.last_completed_op = b.last_completed_op;
  } else {
    into.age_min_s = std::min(into.age_min_s, b.age_min_s);
    into.age_max_s = std::max(into.age_max_s, b.age_max_s);
    into.idle_min_s = std::min(into.idle_min_s, b.idle_min_s);
    into.idle_max_s = std::max(into.idle_max_s, b.idle_max_s);
    if (into.last_completed_op.empty()) into.last_completed_op = b.last_completed_op;
  }
}

// Past kMaxBuckets, the furthest-ahead places fold into one mixed bucket: the ranks behind are
// what a verdict names, so their places stay apart.
void cap_buckets(LiveGroup& g) {
  std::sort(g.buckets.begin(), g.buckets.end(),
            [](const LiveBucket& a, const LiveBucket& b) { return bucket_key(a) < bucket_key(b); });
  if (g.buckets.size() <= kMaxBuckets) return;
  LiveBucket& fold = g.buckets[kMaxBuckets - 1];
  fold.mixed = true;
  for (size_t i = kMaxBuckets; i < g.buckets.size(); ++i) merge_bucket(fold, g.buckets[i]);
  g.buckets.resize(kMaxBuckets);
}

void merge_group(LiveGroup& into, const LiveGroup& g) {
  if (into.desc.empty()) into.desc = g.desc;
  into.size = std::max(into.size, g.size);
  for (const LiveBucket& b : g.buckets) {
    auto it = std::find_if(into.buckets.begin(), into.buckets.end(),
                           [&](const LiveBucket& x) { return same_place(x, b); });
    if (it == into.buckets.end()) {
      into.buckets.push_back(b);
    } else {
      merge_bucket(*it, b);
    }
  }
  cap_buckets(into);
}

json ranks_json(const RankRanges& r) {
  json ranges = json::array();
  for (const auto& [a, b] : r.ranges()) ranges.push_back({a, b});
  return {{"n", r.count()}, {"r", std::move(ranges)}, {"t", r.truncated()}};
}

// Throws std::runtime_error naming what is wrong (caught by summary_from_json).
[[noreturn]] void bad(const std::string& why) { throw std::runtime_error(why); }

const json& field(const json& o, const char* key) {
  if (!o.is_object()) bad("not an object");
  auto it = o.find(key);
  if (it == o.end()) bad(fmt::format("no '{}'", key));
  return *it;
}

int64_t int_field(const json& o, const char* key, int64_t lo, int64_t hi) {
  const json& v = field(o, key);
  if (!v.is_number_integer()) bad(fmt::format("'{}' is not an integer", key));
  const int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}
                        ? INT64_MAX
                        : v.get<int64_t>();
  if (x < lo || x > hi) bad(fmt::format("'{}' = {} is not in {}..{}", key, x, lo, hi));
  return x;
}

uint64_t seq_field(const json& o, const char* key) {
  const json& v = field(o, key);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
    bad(fmt::format("'{}' is not a sequence number", key));
  }
  return v.get<uint64_t>();
}

double seconds_field(const json& o, const char* key, size_t i) {
  const json& v = field(o, key);
  if (!v.is_array() || v.size() != 2 || !v[i].is_number())
    bad(fmt::format("'{}' is not [min, max]", key));
  const double x = v[i].get<double>();
  if (!std::isfinite(x) || x < 0 || x > 1e9) bad(fmt::format("'{}' holds {}", key, x));
  return x;
}

bool bool_field(const json& o, const char* key) {
  const json& v = field(o, key);
  if (!v.is_boolean()) bad(fmt::format("'{}' is not true or false", key));
  return v.get<bool>();
}

std::string text_field(const json& o, const char* key) {
  const json& v = field(o, key);
  if (!v.is_string()) bad(fmt::format("'{}' is not a string", key));
  return clip(v.get<std::string>());
}

RankRanges ranks_from(const json& o, const char* key, int lo, int hi) {
  const json& r = field(o, key);
  const json& list = field(r, "r");
  if (!list.is_array() || list.size() > RankRanges::kDefaultMaxRanges) {
    bad(fmt::format("'{}' lists more than {} ranges", key, RankRanges::kDefaultMaxRanges));
  }
  std::vector<RankRanges::Range> ranges;
  for (const json& p : list) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number_integer()) {
      bad(fmt::format("'{}' holds a range that is not [first, last]", key));
    }
    const int64_t a = p[0].get<int64_t>(), b = p[1].get<int64_t>();
    if (a < lo || b >= hi)
      bad(fmt::format("'{}' names ranks {}-{}, outside {}-{}", key, a, b, lo, hi - 1));
    ranges.emplace_back(static_cast<int>(a), static_cast<int>(b));
  }
  RankRanges out;
  std::string why;
  if (!RankRanges::from_parts(ranges, int_field(r, "n", 0, hi - lo), bool_field(r, "t"), lo, hi,
                              &out, &why)) {
    bad(fmt::format("'{}': {}", key, why));
  }
  return out;
}

std::vector<std::string> hosts_from(const json& o, bool* truncated) {
  const json& h = field(o, "hosts");
  if (!h.is_array() || h.size() > kMaxBucketHosts)
    bad("'hosts' is not a list of at most 256 names");
  std::vector<std::string> out;
  for (const json& x : h) {
    if (!x.is_string()) bad("'hosts' holds something that is not a name");
    out.push_back(clip(x.get<std::string>()));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  *truncated = bool_field(o, "hosts_t");
  return out;
}

}  // namespace

int64_t LiveSummary::accounted() const {
  int64_t n = answered.count();
  for (const auto& m : missing) n += m.ranks.count();
  return n;
}

LiveSummary empty_summary(int lo, int hi, int world_size) {
  LiveSummary s;
  s.lo = lo;
  s.hi = hi;
  s.world_size = world_size;
  s.levels = 0;
  return s;
}

LiveSummary local_summary(int rank, int world_size, const std::string& host,
                          const std::vector<LiveStatus::GroupSnapshot>& groups) {
  LiveSummary s = empty_summary(rank, rank + 1, world_size);
  s.levels = 1;
  s.answered.add(rank);
  for (const auto& g : groups) {
    if (s.groups.size() >= kMaxSummaryGroups) {
      ++s.groups_omitted;
      continue;
    }
    LiveBucket b;
    b.last_completed = g.last_completed_seq;
    b.last_completed_op = g.last_completed_op;
    // The oldest collective in flight names the place; a send/recv only when no collective is.
    const LiveStatus::InflightOp* oldest = nullptr;
    for (const auto& op : g.inflight_ops) {
      if (oldest == nullptr || (oldest->p2p && !op.p2p) ||
          (oldest->p2p == op.p2p && op.seq < oldest->seq)) {
        oldest = &op;
      }
    }
    if (oldest != nullptr) {
      b.inflight_seq = oldest->seq;
      b.inflight_p2p = oldest->p2p;
      b.inflight_op = std::string(op_name(oldest->op));
      b.age_min_s = b.age_max_s = std::max(0.0, oldest->age_s);
    }
    b.idle_min_s = b.idle_max_s = std::max(0.0, g.since_last_progress_s);
    b.ranks.add(rank);
    if (!host.empty()) b.hosts.push_back(clip(host));
    LiveGroup lg;
    lg.pg = clip(g.pg);
    lg.desc = clip(g.desc);
    lg.size = g.size;
    lg.buckets.push_back(std::move(b));
    s.groups.push_back(std::move(lg));
  }
  std::sort(s.groups.begin(), s.groups.end(),
            [](const LiveGroup& a, const LiveGroup& b) { return a.pg < b.pg; });
  return s;
}

void merge_summary(LiveSummary& into, const LiveSummary& part) {
  into.lo = std::min(into.lo, part.lo);
  into.hi = std::max(into.hi, part.hi);
  into.answered.merge(part.answered);
  for (const LiveMissing& m : part.missing) {
    auto it = std::find_if(into.missing.begin(), into.missing.end(),
                           [&](const LiveMissing& x) { return x.kind == m.kind; });
    if (it == into.missing.end()) {
      into.missing.push_back(m);
    } else {
      it->ranks.merge(m.ranks);
      merge_hosts(it->hosts, it->hosts_truncated, m.hosts, m.hosts_truncated);
    }
  }
  std::sort(into.missing.begin(), into.missing.end(),
            [](const LiveMissing& a, const LiveMissing& b) {
              return kind_order(a.kind) < kind_order(b.kind);
            });
  // Both lists are sorted by pg: one linear merge.
  std::vector<LiveGroup> out;
  out.reserve(into.groups.size() + part.groups.size());
  size_t a = 0, b = 0;
  while (a < into.groups.size() || b < part.groups.size()) {
    if (b == part.groups.size() ||
        (a < into.groups.size() && into.groups[a].pg < part.groups[b].pg)) {
      out.push_back(std::move(into.groups[a++]));
    } else if (a == into.groups.size() || part.groups[b].pg < into.groups[a].pg) {
      out.push_back(part.groups[b++]);
    } else {
      merge_group(into.groups[a], part.groups[b++]);
      out.push_back(std::move(into.groups[a++]));
    }
  }
  into.groups_omitted += part.groups_omitted;
  if (out.size() > kMaxSummaryGroups) {
    into.groups_omitted += static_cast<int64_t>(out.size() - kMaxSummaryGroups);
    out.resize(kMaxSummaryGroups);
  }
  into.groups = std::move(out);
  into.requests += part.requests;
  into.levels = std::max(into.levels, part.levels);
}

void add_missing(LiveSummary& s, const std::string& kind, int first, int last,
                 const std::string& why, const std::string& host) {
  if (last < first) return;
  LiveSummary part = empty_summary(first, last + 1, s.world_size);
  LiveMissing m;
  m.kind = kind;
  m.ranks = RankRanges::of(first, last);
  m.example = clip(why);
  if (!host.empty()) m.hosts.push_back(clip(host));
  part.missing.push_back(std::move(m));
  merge_summary(s, part);
}

json summary_json(const LiveSummary& s) {
  json missing = json::array();
  for (const LiveMissing& m : s.missing) {
    missing.push_back({{"kind", m.kind},
                       {"ranks", ranks_json(m.ranks)},
                       {"example", m.example},
                       {"hosts", m.hosts},
                       {"hosts_t", m.hosts_truncated}});
  }
  json groups = json::array();
  for (const LiveGroup& g : s.groups) {
    json buckets = json::array();
    for (const LiveBucket& b : g.buckets) {
      buckets.push_back({{"done", b.last_completed},
                         {"done_op", b.last_completed_op},
                         {"seq", b.inflight_seq},
                         {"p2p", b.inflight_p2p},
                         {"op", b.inflight_op},
                         {"mixed", b.mixed},
                         {"ranks", ranks_json(b.ranks)},
                         {"hosts", b.hosts},
                         {"hosts_t", b.hosts_truncated},
                         {"age", {b.age_min_s, b.age_max_s}},
                         {"idle", {b.idle_min_s, b.idle_max_s}}});
    }
    groups.push_back(
        {{"pg", g.pg}, {"desc", g.desc}, {"size", g.size}, {"buckets", std::move(buckets)}});
  }
  return {{"lo", s.lo},
          {"hi", s.hi},
          {"world_size", s.world_size},
          {"answered", ranks_json(s.answered)},
          {"missing", std::move(missing)},
          {"groups", std::move(groups)},
          {"groups_omitted", s.groups_omitted},
          {"requests", s.requests},
          {"levels", s.levels}};
}

bool summary_from_json(const json& j, int lo, int hi, int world_size, LiveSummary* out,
                       std::string* why) {
  try {
    LiveSummary s = empty_summary(lo, hi, world_size);
    if (int_field(j, "lo", 0, INT32_MAX) != lo || int_field(j, "hi", 0, INT32_MAX) != hi) {
      bad(fmt::format("it covers ranks {}-{}, not {}-{}", field(j, "lo").dump(),
                      field(j, "hi").dump(), lo, hi - 1));
    }
    if (int_field(j, "world_size", 0, INT32_MAX) != world_size) {
      bad(fmt::format("its world size is {}, not {}", field(j, "world_size").dump(), world_size));
    }
    s.answered = ranks_from(j, "answered", lo, hi);
    // Every rank of the span once: the listed ranges of all sets disjoint, the counts adding up.
    std::vector<RankRanges::Range> all(s.answered.ranges());
    const json& missing = field(j, "missing");
    if (!missing.is_array() || missing.size() > 4) bad("'missing' is not a list of kinds");
    for (const json& m : missing) {
      LiveMissing x;
      x.kind = text_field(m, "kind");
      if (kind_order(x.kind) < 0) bad(fmt::format("unknown kind '{}'", x.kind));
      if (std::any_of(s.missing.begin(), s.missing.end(),
                      [&](const LiveMissing& y) { return y.kind == x.kind; })) {
        bad(fmt::format("kind '{}' twice", x.kind));
      }
      x.ranks = ranks_from(m, "ranks", lo, hi);
      x.example = text_field(m, "example");
      x.hosts = hosts_from(m, &x.hosts_truncated);
      all.insert(all.end(), x.ranks.ranges().begin(), x.ranks.ranges().end());
      s.missing.push_back(std::move(x));
    }
    std::sort(s.missing.begin(), s.missing.end(), [](const LiveMissing& a, const LiveMissing& b) {
      return kind_order(a.kind) < kind_order(b.kind);
    });
    std::sort(all.begin(), all.end());
    for (size_t i = 1; i < all.size(); ++i) {
      if (all[i].first <= all[i - 1].second)
        bad(fmt::format("rank {} is counted twice", all[i].first));
    }
    if (s.accounted() != int64_t{hi} - lo) {
      bad(fmt::format("it accounts for {} of its {} ranks", s.accounted(), hi - lo));
    }
    const json& groups = field(j, "groups");
    if (!groups.is_array() || groups.size() > kMaxSummaryGroups) bad("'groups' is not a list");
    for (const json& g : groups) {
      LiveGroup lg;
      lg.pg = text_field(g, "pg");
      lg.desc = text_field(g, "desc");
      lg.size = static_cast<int>(int_field(g, "size", 0, INT32_MAX));
      const json& buckets = field(g, "buckets");
      if (!buckets.is_array() || buckets.size() > kMaxBuckets) bad("'buckets' is not a list");
      int64_t members = 0;
      for (const json& b : buckets) {
        LiveBucket x;
        x.last_completed = seq_field(b, "done");
        x.last_completed_op = text_field(b, "done_op");
        x.inflight_seq = seq_field(b, "seq");
        x.inflight_p2p = bool_field(b, "p2p");
        x.inflight_op = text_field(b, "op");
        x.mixed = bool_field(b, "mixed");
        x.ranks = ranks_from(b, "ranks", lo, hi);
        x.hosts = hosts_from(b, &x.hosts_truncated);
        x.age_min_s = seconds_field(b, "age", 0);
        x.age_max_s = seconds_field(b, "age", 1);
        x.idle_min_s = seconds_field(b, "idle", 0);
        x.idle_max_s = seconds_field(b, "idle", 1);
        members += x.ranks.count();
        lg.buckets.push_back(std::move(x));
      }
      if (members > s.answered.count()) {
        bad(fmt::format("group '{}' holds {} ranks, more than the {} that answered", lg.pg, members,
                        s.answered.count()));
      }
      if (!s.groups.empty() && !(s.groups.back().pg < lg.pg)) bad("groups are not sorted by pg");
      s.groups.push_back(std::move(lg));
    }
    s.groups_omitted = int_field(j, "groups_omitted", 0, INT64_MAX);
    s.requests = int_field(j, "requests", 0, INT64_MAX);
    s.levels = static_cast<int>(int_field(j, "levels", 1, 64));
    *out = std::move(s);
    return true;
  } catch (const std::exception& e) {
    *why = printable(std::string(e.what()).substr(0, 300));
    return false;
  }
}

}  // namespace collie
