// The steps of a replay rank (schedule.h), the memory they hold and whether the ranks' orders can
// all complete.
#include "replay/schedule.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "replay/plan.h"

namespace collie::replay {

namespace {

// "all_reduce #7", "send/recv 0->1 #2".
std::string call_what(const ReplayPlan& plan, const PlanCall& c) {
  const PlanGroup& g = plan.groups[c.group];
  return c.type == OpType::Send
             ? fmt::format("send/recv {}->{} #{}", g.dump_ranks[c.src], g.dump_ranks[c.dst], c.seq)
             : fmt::format("{} #{}", c.recorded, c.seq);
}

}  // namespace

std::string call_label(const ReplayPlan& plan, const PlanCall& c) {
  const PlanGroup& g = plan.groups[c.group];
  const std::string what = call_what(plan, c);
  std::string size;
  if (c.kind == "alltoallv")
    size = fmt::format(", {}, uneven: the busiest rank moves {} B, splits made up",
                       dtype_name(c.dtype), c.bytes);
  else if (c.type != OpType::Barrier)
    size = fmt::format(", {} x {} ({} B)", dtype_name(c.dtype), c.count, c.bytes);
  return fmt::format("{} of group {} '{}'{}", what, g.pg_id, g.desc, size);
}

std::vector<Step> steps_of(const std::vector<PlanOp>& ops) {
  std::vector<Step> out;
  for (size_t i = 0; i < ops.size(); ++i) {
    const bool p2p = is_p2p(ops[i].type);
    if (p2p && !out.empty() && out.back().p2p) {
      out.back().last = i + 1;
      continue;
    }
    out.push_back(Step{i, i + 1, p2p});
  }
  return out;
}

uint64_t aligned(uint64_t bytes) {
  return (bytes + kBufferAlign - 1) / kBufferAlign * kBufferAlign;
}

uint64_t step_bytes(const ReplayPlan& plan, size_t rank, const Step& s) {
  const std::vector<PlanOp>& ops = plan.ranks[rank];
  uint64_t bytes = 0;
  for (size_t i = s.first; i < s.last; ++i) {
    const uint64_t ts = dtype_size(plan.calls[ops[i].call].dtype);
    bytes += aligned(ops[i].in_count * ts) + aligned(ops[i].out_count * ts);
  }
  return bytes;
}

Peak peak_of(const ReplayPlan& plan, size_t rank) {
  Peak p;
  for (const Step& s : steps_of(plan.ranks[rank])) {
    const uint64_t b = step_bytes(plan, rank, s);
    if (b > p.bytes || p.step.last == 0) p = Peak{b, s};
  }
  return p;
}

namespace {

// Runs every rank's steps as far as they go: a call completes once each of its ops is in the
// current step of its rank; a step ends when all its calls have completed. O(ops).
class Simulation {
 public:
  explicit Simulation(const ReplayPlan& plan) : plan_(plan), n_(plan.ranks.size()) {
    need_.assign(plan.calls.size(), 0);
    arrived_.assign(plan.calls.size(), 0);
    members_.resize(plan.calls.size());
    for (size_t r = 0; r < n_; ++r) {
      steps_.push_back(steps_of(plan.ranks[r]));
      for (const PlanOp& op : plan.ranks[r]) {
        ++need_[op.call];
        members_[op.call].push_back(r);
      }
    }
    cur_.assign(n_, 0);
    left_.assign(n_, 0);
    for (size_t r = 0; r < n_; ++r) enter(r);
    while (!ready_.empty()) {
      const size_t c = ready_.back();
      ready_.pop_back();
      for (size_t r : members_[c]) {
        if (--left_[r] == 0) {
          ++cur_[r];
          enter(r);
        }
      }
    }
  }

  bool blocked(size_t r) const { return cur_[r] < steps_[r].size(); }

  // The first op of r's current step whose call has not completed, and a rank it waits for.
  std::pair<size_t, size_t> waits(size_t r) const {
    const Step& s = steps_[r][cur_[r]];
    for (size_t i = s.first; i < s.last; ++i) {
      const size_t c = plan_.ranks[r][i].call;
      if (arrived_[c] == need_[c]) continue;
      for (size_t m : members_[c])
        if (!in_current_step(m, c)) return {i, m};
    }
    return {s.first, r};  // not reached: a blocked step has a call someone has not reached
  }

 private:
  void enter(size_t r) {
    if (!blocked(r)) return;
    const Step& s = steps_[r][cur_[r]];
    left_[r] = s.last - s.first;
    for (size_t i = s.first; i < s.last; ++i) {
      const size_t c = plan_.ranks[r][i].call;
      if (++arrived_[c] == need_[c]) ready_.push_back(c);
    }
  }

  bool in_current_step(size_t r, size_t c) const {
    if (!blocked(r)) return true;
    const Step& s = steps_[r][cur_[r]];
    for (size_t i = s.first; i < s.last; ++i)
      if (plan_.ranks[r][i].call == c) return true;
    return false;
  }

  const ReplayPlan& plan_;
  size_t n_;
  std::vector<std::vector<Step>> steps_;
  std::vector<size_t> cur_, left_, need_, arrived_, ready_;
  std::vector<std::vector<size_t>> members_;  // per call, the rank of each of its ops
};

}  // namespace

std::string order_conflict(const ReplayPlan& plan) {
  const Simulation sim(plan);
  size_t start = plan.ranks.size();
  for (size_t r = 0; r < plan.ranks.size() && start == plan.ranks.size(); ++r)
    if (sim.blocked(r)) start = r;
  if (start == plan.ranks.size()) return "";
  // Every blocked rank waits for a blocked rank (one that finished has passed every call it is
  // in), so following the waits from any of them comes back round: that loop is the conflict.
  std::vector<size_t> seen_at(plan.ranks.size(), SIZE_MAX), path;
  size_t r = start;
  while (seen_at[r] == SIZE_MAX) {
    seen_at[r] = path.size();
    path.push_back(r);
    r = sim.waits(r).second;
  }
  std::string out;
  for (size_t k = seen_at[r]; k < path.size(); ++k) {
    const size_t me = path[k];
    const auto [op, other] = sim.waits(me);
    const PlanOp& o = plan.ranks[me][op];
    const PlanCall& c = plan.calls[o.call];
    out += k == seen_at[r] ? fmt::format("rank {} waits", plan.played[me]) : ", which waits";
    out += fmt::format(" in {} of group {} (its entry {}) for rank {}", call_what(plan, c),
                       plan.groups[c.group].pg_id, o.entry, plan.played[other]);
  }
  return out;
}

void check_schedule(const ReplayPlan& plan, int64_t max_bytes) {
  // 48 sends of 64 MiB between two collectives are 3 GiB in flight together, however small each
  // one is.
  for (size_t r = 0; r < plan.ranks.size(); ++r) {
    const Peak p = peak_of(plan, r);
    if (p.bytes <= static_cast<uint64_t>(max_bytes)) continue;
    const std::vector<PlanOp>& ops = plan.ranks[r];
    const PlanOp& a = ops[p.step.first];
    const std::string what =
        p.step.p2p ? fmt::format(
                         "its {} send/recv ops from entry {} to entry {} (posted together "
                         "between two collectives) hold",
                         p.step.last - p.step.first, a.entry, ops[p.step.last - 1].entry)
                   : fmt::format("entry {} ({}) holds in its input and output", a.entry,
                                 call_label(plan, plan.calls[a.call]));
    throw InvalidArgument(fmt::format(
        "rank {}: {} {} bytes of buffers at once, more than the {} a replayed rank may hold "
        "(--max-bytes)",
        plan.played[r], what, p.bytes, max_bytes));
  }
  // Ranks that recorded two groups' collectives in opposite orders wait for each other for ever
  // in a replay that waits for each collective: said now, not as a timeout minutes later.
  if (const std::string c = order_conflict(plan); !c.empty())
    throw InvalidArgument(fmt::format(
        "the dumps' ranks ran their ops in orders a replay cannot follow (it waits for each "
        "collective before the next op): {}; replay fewer ranks (--ranks) or groups",
        c));
}

}  // namespace collie::replay
