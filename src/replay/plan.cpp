// build_plan: groups, matched collectives and send/recv pairs, and each rank's op sequence (see
// plan.h for the rules); recorded_op.cpp reads the entries.
#include "replay/plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <numeric>
#include <set>

#include "comm/rendezvous.h"
#include "core/error.h"
#include "core/printable.h"
#include "replay/recorded_op.h"
#include "replay/schedule.h"
#include "replay/splits.h"

namespace collie::replay {
namespace {

using GroupKey = std::pair<std::string, std::vector<int>>;  // a group's id and members

// One played rank's recorded op that may be replayed.
struct Cand {
  int rank = 0;  // replay rank
  size_t entry = 0;
  RecordedOp op;
};

// Reasons ops are left out or assumed: counted, with the first example of each.
class Notes {
 public:
  void add(const std::string& reason, const std::string& example) {
    auto& [count, first] = by_reason_[reason];
    if (count++ == 0) {
      first = example;
      order_.push_back(reason);
    }
  }
  void line(const std::string& text) { lines_.push_back(text); }
  std::vector<std::string> lines() const {
    std::vector<std::string> out = lines_;
    for (const std::string& r : order_) {
      const auto& [count, first] = by_reason_.at(r);
      out.push_back(fmt::format("{} op{}: {} (first: {})", count, count == 1 ? "" : "s", r, first));
    }
    return out;
  }

 private:
  std::map<std::string, std::pair<size_t, std::string>> by_reason_;
  std::vector<std::string> order_;
  std::vector<std::string> lines_;
};

// Group ids in a stable order: numbers by value ("2" before "10"), then the others.
bool id_before(const std::string& a, const std::string& b) {
  auto number = [](const std::string& s) {
    int64_t v = -1;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && p == s.data() + s.size() ? v : int64_t{-1};
  };
  const int64_t x = number(a), y = number(b);
  if ((x >= 0) != (y >= 0)) return x >= 0;
  return x >= 0 ? x < y : a < b;
}

uint64_t mix(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 0x100000001b3ULL;
  return h;
}

class Builder {
 public:
  Builder(const std::vector<RankDump>& dumps, const PlanOptions& o) : o_(o) {
    for (const RankDump& d : dumps) {
      by_rank_[d.rank] = &d;
      world_ = std::max({world_, d.world_size, d.rank + 1});
      for (const auto& [id, g] : d.groups)
        for (int r : g.ranks) world_ = std::max(world_, r + 1);
    }
  }

  ReplayPlan build() {
    plan_.dump_world = world_;
    choose_ranks();
    make_groups();
    read_entries();
    match_collectives();
    match_p2p();
    for (auto& ops : plan_.ranks) {
      std::sort(ops.begin(), ops.end(),
                [](const PlanOp& a, const PlanOp& b) { return a.entry < b.entry; });
    }
    plan_.notes = notes_.lines();
    if (plan_.calls.empty()) {
      throw InvalidArgument(fmt::format("nothing in the dumps can be replayed{}",
                                        plan_.notes.empty()
                                            ? ": they record no collective or p2p op"
                                            : ": " + plan_.notes.front()));
    }
    check_schedule(plan_, o_.max_bytes);
    return std::move(plan_);
  }

 private:
  void choose_ranks() {
    if (o_.world < 1) throw InvalidArgument("a replay needs at least 1 rank");
    std::vector<int> played = o_.ranks;
    if (played.empty()) {
      if (world_ != o_.world) {
        throw InvalidArgument(fmt::format(
            "the dumps are of {} ranks and the replay has {}: run it on {} ranks (-np {}), or "
            "pick {} of the dumps' ranks with --ranks (e.g. --ranks 0-{})",
            world_, o_.world, world_, world_, o_.world, o_.world - 1));
      }
      played.resize(world_);
      std::iota(played.begin(), played.end(), 0);
    } else if (static_cast<int>(played.size()) != o_.world) {
      throw InvalidArgument(
          fmt::format("--ranks names {} ranks for a replay of {} ranks", played.size(), o_.world));
    }
    std::vector<int> missing;
    for (size_t i = 0; i < played.size(); ++i) {
      const int d = played[i];
      if (d >= world_)
        throw InvalidArgument(
            fmt::format("--ranks names rank {}, but the dumps are of {} ranks", d, world_));
      if (!replay_of_.emplace(d, static_cast<int>(i)).second)
        throw InvalidArgument(fmt::format("--ranks names rank {} twice", d));
      if (by_rank_.count(d) == 0) missing.push_back(d);
    }
    if (!missing.empty()) {
      std::vector<int> have;
      for (const auto& [r, _] : by_rank_) have.push_back(r);
      throw InvalidArgument(fmt::format(
          "no dump of {} {}: each replayed rank runs what its own dump recorded (the dumps are "
          "of {} {}; pick others with --ranks)",
          missing.size() == 1 ? "rank" : "ranks", format_ranks(missing),
          have.size() == 1 ? "rank" : "ranks", format_ranks(have)));
    }
    plan_.played = std::move(played);
    plan_.ranks.resize(plan_.played.size());
  }

  // A group is an id with its members: dumps of one job agree on them, but PyTorch's test
  // fixtures (and jobs that reuse a name) may give one id different members on different ranks,
  // which are then different groups. A group replays when every member is played and every
  // member's dump has the same members under its id.
  void make_groups() {
    auto before = [](const GroupKey& a, const GroupKey& b) {
      if (a.first != b.first) return id_before(a.first, b.first);
      return a.second < b.second;
    };
    std::map<GroupKey, std::string, decltype(before)> seen(before);
    for (int d : plan_.played) {
      for (const auto& [id, g] : by_rank_.at(d)->groups) {
        // new_group would refuse it only once the ranks run, naming no dump.
        std::set<int> members;
        for (int r : g.ranks)
          if (!members.insert(r).second)
            throw InvalidArgument(fmt::format(
                "the dump of rank {} lists rank {} twice in the members of group {} {} ({}): not "
                "a group a job can make",
                d, r, quote(id), quote(g.desc),
                quote(fmt::format("{}", fmt::join(g.ranks, ", ")))));
        seen.emplace(GroupKey{id, g.ranks}, g.desc);
      }
    }
    for (const auto& [key, desc] : seen) {
      const auto& [id, ranks] = key;
      if (ranks.empty()) continue;
      std::vector<int> absent, disagree;
      PlanGroup pg{id, desc, ranks, {}};
      for (int r : ranks) {
        auto it = replay_of_.find(r);
        if (it == replay_of_.end()) {
          absent.push_back(r);
          continue;
        }
        pg.replay_ranks.push_back(it->second);
        const auto& theirs = by_rank_.at(r)->groups;
        const auto g = theirs.find(id);
        if (g == theirs.end() || g->second.ranks != ranks) disagree.push_back(r);
      }
      const std::string name =
          fmt::format("group {} '{}' (ranks {})", id, desc, format_ranks(ranks));
      if (!absent.empty()) {
        notes_.line(fmt::format("{} is not replayed: {} {} {} not", name,
                                absent.size() == 1 ? "rank" : "ranks", format_ranks(absent),
                                absent.size() == 1 ? "is" : "are"));
        continue;
      }
      if (!disagree.empty()) {
        notes_.line(fmt::format("{} is not replayed: the dump{} of {} {} give{} it other members",
                                name, disagree.size() == 1 ? "" : "s",
                                disagree.size() == 1 ? "rank" : "ranks", format_ranks(disagree),
                                disagree.size() == 1 ? "s" : ""));
        continue;
      }
      group_index_[key] = static_cast<int>(plan_.groups.size());
      plan_.groups.push_back(std::move(pg));
    }
  }

  // Group rank of world rank `r` in group `gi`, -1 when not a member.
  int group_rank(int gi, int r) const {
    const auto& m = plan_.groups[gi].dump_ranks;
    const auto it = std::find(m.begin(), m.end(), r);
    return it == m.end() ? -1 : static_cast<int>(it - m.begin());
  }

  void read_entries() {
    for (size_t i = 0; i < plan_.played.size(); ++i) {
      const RankDump& d = *by_rank_.at(plan_.played[i]);
      for (size_t k = 0; k < d.entries.size(); ++k) {
        const DumpEntry& e = d.entries[k];
        const std::string where = fmt::format("rank {} entry {} ({})", d.rank, k, e.profiling_name);
        const auto g = group_index_.find(GroupKey{e.pg_id, d.groups.at(e.pg_id).ranks});
        if (g == group_index_.end()) {
          notes_.add("in a group that is not replayed", where);
          continue;
        }
        std::string why;
        std::optional<RecordedOp> op;
        try {
          op = read_entry(e, &why);
        } catch (const InvalidArgument& bad) {
          throw InvalidArgument(fmt::format("{}: {}", where, bad.what()));
        }
        if (!op) {
          notes_.add(why, where);
          continue;
        }
        const int gi = g->second;
        const int me = group_rank(gi, d.rank);
        if (me < 0) {
          notes_.add("recorded by a rank its group's member list does not name", where);
          continue;
        }
        const uint64_t bytes =
            static_cast<uint64_t>(std::max(op->in_total, op->out_total)) * dtype_size(op->dtype);
        if (bytes > static_cast<uint64_t>(o_.max_bytes)) {
          throw InvalidArgument(
              fmt::format("{} records {} bytes of buffers, more than the {} a replayed op may have "
                          "(--max-bytes)",
                          where, bytes, o_.max_bytes));
        }
        Cand c{static_cast<int>(i), k, *op};
        if (is_p2p(op->type)) {
          const int peer = op->peer >= 0 ? group_rank(gi, op->peer) : -1;
          if (peer < 0) {
            notes_.add("send/recv without a recorded peer in its group", where);
            continue;
          }
          const bool send = op->type == OpType::Send;
          auto& pair = p2p_[{gi, send ? me : peer, send ? peer : me}];
          (send ? pair.first : pair.second).push_back(std::move(c));
        } else if (e.collective_seq_id == 0) {
          notes_.add("collective without a sequence number", where);
        } else {
          colls_[{gi, e.collective_seq_id}].push_back(std::move(c));
        }
      }
    }
  }

  // Adds a call and each member's op.
  void add_call(PlanCall call, std::vector<std::pair<const Cand*, PlanOp>> ops) {
    for (auto& [c, op] : ops) {
      op.call = plan_.calls.size();
      op.entry = c->entry;
      op.recorded_ms = c->op.duration_ms;
      plan_.ranks[c->rank].push_back(std::move(op));
    }
    plan_.calls.push_back(std::move(call));
  }

  void match_collectives() {
    for (auto& [key, cands] : colls_) {
      const auto [gi, seq] = key;
      const PlanGroup& g = plan_.groups[gi];
      const int n = static_cast<int>(g.dump_ranks.size());
      const Cand& first = cands.front();
      const std::string where = fmt::format("group {} {} #{}", g.pg_id, first.op.name, seq);
      std::vector<const Cand*> by_member(n, nullptr);
      bool twice = false;
      for (const Cand& c : cands) {
        const int gr = group_rank(gi, plan_.played[c.rank]);
        twice = twice || by_member[gr] != nullptr;
        by_member[gr] = &c;
      }
      std::vector<int> lacking;
      for (int m = 0; m < n; ++m)
        if (by_member[m] == nullptr) lacking.push_back(g.dump_ranks[m]);
      if (!lacking.empty()) {
        notes_.add(
            "not recorded by every member of its group (a ring that wrapped, or a rank that never "
            "got there)",
            fmt::format("{}, not by rank{} {}", where, lacking.size() == 1 ? "" : "s",
                        format_ranks(lacking)));
        continue;
      }
      if (twice) {
        notes_.add("recorded twice by one rank", where);
        continue;
      }
      std::string why;
      if (!add_collective(gi, seq, by_member, &why)) notes_.add(why, where);
    }
  }

  // Without a recorded root, gather's root is the one member with an output, scatter's the one
  // with an input; -1 when that does not tell (and for broadcast and reduce).
  static int inferred_root(const std::vector<const Cand*>& m) {
    const OpType t = m[0]->op.type;
    if (t != OpType::Gather && t != OpType::Scatter) return -1;
    int root = -1;
    for (size_t k = 0; k < m.size(); ++k) {
      const int64_t side = t == OpType::Gather ? m[k]->op.out_total : m[k]->op.in_total;
      if (side == 0) continue;
      if (root >= 0) return -1;
      root = static_cast<int>(k);
    }
    return root;
  }

  // The call of one matched collective; false with `why` when the members disagree.
  bool add_collective(int gi, uint64_t seq, const std::vector<const Cand*>& m, std::string* why) {
    const int n = static_cast<int>(m.size());
    const RecordedOp& r0 = m[0]->op;
    PlanCall call;
    call.group = gi;
    call.type = r0.type;
    call.recorded = r0.name;
    call.seq = seq;
    call.dtype = r0.dtype;
    for (const Cand* c : m) {
      if (c->op.type != r0.type) {
        *why = "members recorded different ops";
        return false;
      }
      if (traits(c->op.type).count != OpTraits::Count::None && c->op.dtype != r0.dtype) {
        *why = "members recorded different dtypes";
        return false;
      }
    }
    if (has_root(r0.type)) {
      std::set<int> roots;
      for (const Cand* c : m) roots.insert(c->op.root);
      if (roots.size() > 1) {
        *why = "members recorded different roots";
        return false;
      }
      if (*roots.begin() >= 0) {
        call.root = group_rank(gi, *roots.begin());
        if (call.root < 0) {
          *why = "its root is not a member of its group";
          return false;
        }
      } else {
        call.root = inferred_root(m);
        if (call.root < 0) {
          call.root = 0;
          notes_.add("root not recorded (PyTorch's dumps): replayed with root 0",
                     fmt::format("group {} {} #{}", plan_.groups[gi].pg_id, r0.name, seq));
        }
      }
    }
    if (has_reduce_op(r0.type)) {
      std::set<std::string> ops;
      for (const Cand* c : m) ops.insert(c->op.reduce_op);
      const auto op = parse_reduce_op(*ops.begin());
      if (ops.size() > 1 || (!ops.begin()->empty() && !op)) {
        *why = "members recorded different or unknown reduce ops";
        return false;
      }
      call.reduce_op = op.value_or(ReduceOp::Sum);
      if (!op)
        notes_.add("reduce op not recorded (PyTorch's dumps): replayed as sum",
                   fmt::format("group {} {} #{}", plan_.groups[gi].pg_id, r0.name, seq));
    }
    // Per-rank element counts: what each member's buffers hold in collie's API (comm/op.h).
    std::vector<int64_t> in(n), out(n);
    for (int k = 0; k < n; ++k) {
      in[k] = m[k]->op.in_total;
      out[k] = m[k]->op.out_total;
    }
    auto all_equal = [](const std::vector<int64_t>& v) {
      return std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == v[0]; });
    };
    std::vector<std::pair<const Cand*, PlanOp>> ops(n);
    for (int k = 0; k < n; ++k) {
      ops[k].first = m[k];
      ops[k].second.type = r0.type;
    }
    const int64_t un = n;
    // How the members' buffers relate follows the op's size rule (comm/op.h, OpTraits::Sizes).
    using Sizes = OpTraits::Sizes;
    const Sizes rule = traits(r0.type).sizes;
    switch (is_p2p(r0.type) ? Sizes::None : rule) {
      case Sizes::InPlace:
        if (!all_equal(in)) {
          *why = "members recorded different sizes";
          return false;
        }
        for (auto& [c, op] : ops) op.in_count = static_cast<size_t>(in[0]);
        call.count = in[0];
        call.bytes = in[0];
        break;
      case Sizes::OutputIsInputTimesN:
      case Sizes::RootOutputIsInputTimesN:
      case Sizes::InputIsOutputTimesN:
      case Sizes::RootInputIsOutputTimesN: {
        // One side is every rank's part, the other the n parts (on the root only for gather
        // and scatter): gathers take the input as the part, scatters the output.
        const bool gathers =
            rule == Sizes::OutputIsInputTimesN || rule == Sizes::RootOutputIsInputTimesN;
        const bool rooted =
            rule == Sizes::RootOutputIsInputTimesN || rule == Sizes::RootInputIsOutputTimesN;
        const std::vector<int64_t>& part = gathers ? in : out;
        const std::vector<int64_t>& whole = gathers ? out : in;
        const bool uneven =
            !all_equal(part) || (!rooted && std::any_of(whole.begin(), whole.end(), [&](int64_t w) {
              return w != 0 && w != part[0] * un;
            }));
        if (uneven) {
          *why = fmt::format("per-rank sizes differ: collie's {} is even", op_name(r0.type));
          return false;
        }
        for (int k = 0; k < n; ++k) {
          PlanOp& op = ops[k].second;
          const size_t p = static_cast<size_t>(part[0]);
          const size_t w = !rooted || k == call.root ? p * static_cast<size_t>(n) : 0;
          op.in_count = gathers ? p : w;
          op.out_count = gathers ? w : p;
        }
        call.count = part[0];
        call.bytes = part[0] * un;
        break;
      }
      case Sizes::Exchange: {
        for (int k = 0; k < n; ++k)
          if (out[k] == 0) out[k] = in[k];  // an output not recorded: as large as the input
        const bool even = all_equal(in) && all_equal(out) && in[0] == out[0] && in[0] % un == 0;
        for (int k = 0; k < n; ++k) {
          ops[k].second.in_count = static_cast<size_t>(in[k]);
          ops[k].second.out_count = static_cast<size_t>(out[k]);
        }
        if (even) {
          call.kind = "alltoall";
          call.count = in[0] / un;
          call.bytes = in[0];
        } else {
          const auto splits = splits_for_totals(in, out);
          if (!splits) {
            *why = "all_to_all whose ranks send and receive different totals";
            return false;
          }
          for (int k = 0; k < n; ++k) {
            ops[k].second.input_splits = (*splits)[k];
            for (int j = 0; j < n; ++j) ops[k].second.output_splits.push_back((*splits)[j][k]);
          }
          call.kind = "alltoallv";
          call.approximate = true;
          call.count = 0;
          call.bytes = std::max(*std::max_element(in.begin(), in.end()),
                                *std::max_element(out.begin(), out.end()));
          notes_.add(
              "all_to_all splits are not recorded: replayed with splits that give every rank "
              "its recorded totals",
              fmt::format("group {} {} #{}", plan_.groups[gi].pg_id, r0.name, seq));
        }
        break;
      }
      case Sizes::None:
        if (is_p2p(r0.type)) {
          *why = "not a collective";
          return false;
        }
        call.kind = std::string(op_name(r0.type));
        break;
    }
    if (call.kind.empty()) call.kind = std::string(op_name(r0.type));
    call.bytes *= static_cast<int64_t>(dtype_size(call.dtype));
    if (rule == Sizes::None) call.bytes = 0;
    add_call(std::move(call), std::move(ops));
    return true;
  }

  void match_p2p() {
    for (auto& [key, lists] : p2p_) {
      const auto [gi, src, dst] = key;
      const auto& [sends, recvs] = lists;
      const PlanGroup& g = plan_.groups[gi];
      const std::string pair =
          fmt::format("group {} rank {} -> rank {}", g.pg_id, g.dump_ranks[src], g.dump_ranks[dst]);
      const size_t matched = std::min(sends.size(), recvs.size());
      // A ring that wrapped lost its oldest ops: pair the newest. Otherwise pair from the start
      // (what is left over was posted while its peer had not got there).
      const bool wrapped =
          by_rank_.at(g.dump_ranks[src])->wrapped || by_rank_.at(g.dump_ranks[dst])->wrapped;
      const size_t s0 = wrapped ? sends.size() - matched : 0;
      const size_t r0 = wrapped ? recvs.size() - matched : 0;
      if (sends.size() != recvs.size()) {
        notes_.add("send or recv without its pair in the peer's dump",
                   fmt::format("{}: {} sends, {} recvs", pair, sends.size(), recvs.size()));
      }
      for (size_t k = 0; k < matched; ++k) {
        const Cand& s = sends[s0 + k];
        const Cand& r = recvs[r0 + k];
        if (s.op.dtype != r.op.dtype || s.op.in_total != r.op.in_total) {
          notes_.add("send and recv of different sizes or dtypes",
                     fmt::format("{}, pair {}", pair, k + 1));
          continue;
        }
        PlanCall call;
        call.group = gi;
        call.type = OpType::Send;
        call.recorded = "send/recv";
        call.seq = k + 1;
        call.dtype = s.op.dtype;
        call.src = src;
        call.dst = dst;
        call.kind = "sendrecv";
        call.count = s.op.in_total;
        call.bytes = s.op.in_total * static_cast<int64_t>(dtype_size(s.op.dtype));
        PlanOp so, ro;
        so.type = OpType::Send;
        so.in_count = static_cast<size_t>(s.op.in_total);
        so.peer = dst;
        ro.type = OpType::Recv;
        ro.in_count = so.in_count;
        ro.peer = src;
        add_call(std::move(call), {{&s, std::move(so)}, {&r, std::move(ro)}});
      }
    }
  }

  const PlanOptions& o_;
  int world_ = 0;
  std::map<int, const RankDump*> by_rank_;
  std::map<int, int> replay_of_;  // dump rank -> replay rank
  std::map<GroupKey, int> group_index_;
  std::map<std::pair<int, uint64_t>, std::vector<Cand>> colls_;
  // (group, src, dst) in group ranks -> (sends on src, recvs on dst), each in recorded order.
  std::map<std::tuple<int, int, int>, std::pair<std::vector<Cand>, std::vector<Cand>>> p2p_;
  Notes notes_;
  ReplayPlan plan_;
};

}  // namespace

uint64_t ReplayPlan::fingerprint() const {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int r : played) h = mix(h, static_cast<uint64_t>(r));
  for (const PlanGroup& g : groups)
    for (int r : g.replay_ranks) h = mix(h, static_cast<uint64_t>(r));
  for (const auto& ops : ranks) {
    h = mix(h, ops.size());
    for (const PlanOp& op : ops) {
      h = mix(mix(mix(h, op.call), op.in_count), op.out_count);
      h = mix(mix(h, static_cast<uint64_t>(op.type)), static_cast<uint64_t>(op.peer));
      for (int64_t s : op.input_splits) h = mix(h, static_cast<uint64_t>(s));
    }
  }
  for (const PlanCall& c : calls) {
    h = mix(mix(h, static_cast<uint64_t>(c.dtype)), static_cast<uint64_t>(c.reduce_op));
    h = mix(h, static_cast<uint64_t>(c.root));
  }
  return h;
}

std::vector<int> parse_rank_list(const std::string& text, const std::string& what) {
  std::vector<int> out;
  auto number = [&](std::string_view s) {
    int v = -1;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v < 0 || v >= kMaxAnalyzeWorld)
      throw InvalidArgument(fmt::format("{} {}: {} is not a rank in 0..{}", what, quote(text),
                                        quote(s), kMaxAnalyzeWorld - 1));
    return v;
  };
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = std::string_view(text).substr(start, comma - start);
    const size_t dash = item.find('-');
    const int a = number(item.substr(0, dash));
    const int b = dash == std::string_view::npos ? a : number(item.substr(dash + 1));
    if (b < a)
      throw InvalidArgument(
          fmt::format("{} {}: {} is a range down", what, quote(text), quote(item)));
    if (out.size() + static_cast<size_t>(b - a) + 1 > static_cast<size_t>(kMaxAnalyzeWorld))
      throw InvalidArgument(fmt::format("{} {} names too many ranks", what, quote(text)));
    for (int r = a; r <= b; ++r) out.push_back(r);
    start = comma + 1;
  }
  return out;
}

ReplayPlan build_plan(const std::vector<RankDump>& dumps, const PlanOptions& o) {
  return Builder(dumps, o).build();
}

}  // namespace collie::replay
