#include "replay/runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string_view>

#include "comm/op_table.h"
#include "core/clock.h"
#include "core/error.h"
#include "perf/host_exchange.h"
#include "replay/schedule.h"
#include "stack/init.h"

namespace collie::replay {
namespace {

double us_since(Clock::TimePoint t) {
  return std::chrono::duration<double, std::micro>(Clock::system().now() - t).count();
}

// One collective of the plan, as its replay function gets it.
struct ReplayCall {
  ProcessGroup& pg;
  const PlanOp& op;
  const PlanCall& c;
  TensorView in, out;
  CommonOptions common;  // the replay's timeout, synchronous
};

template <typename O>
O options(const ReplayCall& r) {
  O o;
  static_cast<CommonOptions&>(o) = r.common;
  return o;
}

// How each op is replayed: its ProcessGroup verb with the recorded root, reduce op and splits.
// A new op does not build until it has a row (comm/op_table.h). send/recv are posted as pairs
// (Runner::post), never through this table.
using ReplayFn = std::shared_ptr<Work> (*)(const ReplayCall&);
constexpr OpTable<ReplayFn> kReplayOps = op_table<ReplayFn>({
    {OpType::Send, nullptr},
    {OpType::Recv, nullptr},
    {OpType::Broadcast,
     [](const ReplayCall& r) {
       auto o = options<BroadcastOptions>(r);
       o.root = r.c.root;
       return r.pg.broadcast(r.in, o);
     }},
    {OpType::AllReduce,
     [](const ReplayCall& r) {
       auto o = options<AllReduceOptions>(r);
       o.op = r.c.reduce_op;
       return r.pg.all_reduce(r.in, o);
     }},
    {OpType::Reduce,
     [](const ReplayCall& r) {
       auto o = options<ReduceOptions>(r);
       o.op = r.c.reduce_op;
       o.root = r.c.root;
       return r.pg.reduce(r.in, o);
     }},
    {OpType::AllGather,
     [](const ReplayCall& r) {
       return r.pg.all_gather(r.in, r.out, options<AllGatherOptions>(r));
     }},
    {OpType::Gather,
     [](const ReplayCall& r) {
       auto o = options<GatherOptions>(r);
       o.root = r.c.root;
       return r.pg.gather(r.in, r.out, o);
     }},
    {OpType::Scatter,
     [](const ReplayCall& r) {
       auto o = options<ScatterOptions>(r);
       o.root = r.c.root;
       return r.pg.scatter(r.in, r.out, o);
     }},
    {OpType::ReduceScatter,
     [](const ReplayCall& r) {
       auto o = options<ReduceScatterOptions>(r);
       o.op = r.c.reduce_op;
       return r.pg.reduce_scatter(r.in, r.out, o);
     }},
    {OpType::AllToAll,
     [](const ReplayCall& r) {
       auto o = options<AllToAllOptions>(r);
       o.input_splits = r.op.input_splits;
       o.output_splits = r.op.output_splits;
       return r.pg.all_to_all(r.in, r.out, o);
     }},
    {OpType::Barrier, [](const ReplayCall& r) { return r.pg.barrier(options<BarrierOptions>(r)); }},
});

class Runner {
 public:
  Runner(ProcessGroup& world, const ReplayPlan& plan, const RunnerOptions& o)
      : world_(world),
        plan_(plan),
        ops_(plan.ranks.at(world.rank())),
        timeout_(o.timeout == kUseGroupTimeout ? world.info().timeout : o.timeout),
        dev_(world.device_runtime()),
        peak_(peak_of(plan, static_cast<size_t>(world.rank()))) {}

  RankTimes run(const RunnerOptions& o) {
    agree_on_plan_and_memory();
    make_groups();
    arena_ = dev_.allocate(std::max<uint64_t>(peak_.bytes, 1));
    RankTimes t;
    t.op_us.assign(ops_.size(), 0);
    for (int w = 0; w < o.warmup; ++w) pass(nullptr);
    for (int i = 0; i < o.iters; ++i) t.pass_us += pass(&t.op_us);
    for (double& v : t.op_us) v /= o.iters;
    t.pass_us /= o.iters;
    return t;
  }

 private:
  // One all_gather: every rank's plan fingerprint, and what its buffers need against what its
  // device has free, before any rank allocates (so none runs out of memory halfway, and all
  // ranks stop together with the same line). Ranks whose buffers are host memory on one host
  // share that host's free memory.
  void agree_on_plan_and_memory() {
    const device::MemoryReport m = dev_.memory();
    const uint64_t host = dev_.host_accessible() ? host_id() : 0;
    uint64_t mine[4] = {plan_.fingerprint(), peak_.bytes,
                        static_cast<uint64_t>(std::max<int64_t>(m.free_bytes, -1)), host};
    std::vector<uint64_t> all(4 * static_cast<size_t>(world_.size()));
    perf::all_gather_host(world_, TensorView::cpu(mine, 4, DType::UInt64),
                          TensorView::cpu(all.data(), all.size(), DType::UInt64), timeout_);
    for (int r = 0; r < world_.size(); ++r) {
      if (all[4 * r] != all[0])
        throw InvalidArgument(fmt::format(
            "[Rank {}] rank {} built another replay plan than rank 0: give every rank the same "
            "dumps and flags",
            world_.rank(), r));
    }
    for (int r = 0; r < world_.size(); ++r) {
      const auto free = static_cast<int64_t>(all[4 * r + 2]);
      if (free < 0) continue;  // unknown
      uint64_t need = all[4 * r + 1];
      int sharing = 1;
      const uint64_t h = all[4 * r + 3];
      for (int q = 0; h != 0 && q < world_.size(); ++q) {
        if (q == r || all[4 * q + 3] != h) continue;
        need += all[4 * q + 1];
        ++sharing;
      }
      if (need <= static_cast<uint64_t>(free)) continue;
      throw DeviceError(fmt::format(
          "[Rank {}] the replay needs {} bytes of buffers at once on rank {}'s device{}, which "
          "has {} free: replay fewer ranks (--ranks) or on a larger machine",
          world_.rank(), need, r,
          sharing > 1 ? fmt::format(" (with the {} other ranks on its host)", sharing - 1) : "",
          free));
    }
  }

  // The same number on ranks of one host (one collie build), 0 never.
  static uint64_t host_id() {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    return static_cast<uint64_t>(std::hash<std::string_view>{}(name)) | 1;
  }

  void make_groups() {
    for (const PlanGroup& g : plan_.groups) {
      NewGroupOptions no;
      no.timeout = timeout_;
      no.desc = g.desc;
      groups_.push_back(new_group(world_, g.replay_ranks, no));
    }
  }

  // Runs every op once; adds each op's time to `times` (when given); returns the pass's time.
  double pass(std::vector<double>* times) {
    BarrierOptions bo;
    bo.timeout = timeout_;
    bo.in_metrics = false;  // lines the ranks up; not one of the replayed ops
    world_.barrier(bo)->wait();
    const auto start = Clock::system().now();
    for (size_t i = 0; i < ops_.size(); ++i) {
      const PlanOp& op = ops_[i];
      if (is_p2p(op.type)) {
        if (batch_.empty()) {
          batch_start_ = Clock::system().now();
          arena_used_ = 0;
        }
        batch_.emplace_back(i, guarded(i, [&] { return post(op); }));
        continue;
      }
      flush(times);
      const auto t = Clock::system().now();
      guarded(i, [&] {
        issue(op)->wait();
        sync(op);
        return std::shared_ptr<Work>();
      });
      if (times) (*times)[i] += us_since(t);
    }
    flush(times);
    return us_since(start);
  }

  void flush(std::vector<double>* times) {
    for (const auto& posted : batch_) {
      const size_t i = posted.first;
      guarded(i, [&] {
        posted.second->wait();
        sync(ops_[i]);
        return posted.second;
      });
      if (times) (*times)[i] += us_since(batch_start_);
    }
    batch_.clear();
  }

  ProcessGroup& group_of(const PlanOp& op) { return *groups_.at(plan_.calls[op.call].group); }

  void sync(const PlanOp& op) {
    device::DeviceRuntime& d = group_of(op).device_runtime();
    if (d.asynchronous()) d.synchronize();
  }

  // Runs `f` for op i; errors name the rank, the op and its dump entry.
  template <typename F>
  std::shared_ptr<Work> guarded(size_t i, F f) {
    try {
      return f();
    } catch (const TimeoutError& e) {
      throw TimeoutError(context(i, e.what()));
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(context(i, e.what()));
    } catch (const Error& e) {
      throw Error(context(i, e.what()));
    }
  }

  std::string context(size_t i, const std::string& what) const {
    const PlanOp& op = ops_[i];
    const PlanCall& c = plan_.calls[op.call];
    return fmt::format("[Rank {}] replaying {} #{} of group {} (rank {}'s dump entry {}): {}",
                       world_.rank(), c.recorded, c.seq, plan_.groups[c.group].pg_id,
                       plan_.played[world_.rank()], op.entry, what);
  }

  std::shared_ptr<Work> post(const PlanOp& op) {
    const DType dt = plan_.calls[op.call].dtype;
    void* at = arena_.data() + arena_used_;
    arena_used_ += aligned(op.in_count * dtype_size(dt));
    P2POptions o;
    o.timeout = timeout_;
    o.async_op = true;
    const TensorView t = dev_.view(at, op.in_count, dt);
    ProcessGroup& pg = group_of(op);
    return op.type == OpType::Send ? pg.send(t, op.peer, o) : pg.recv(t, op.peer, o);
  }

  std::shared_ptr<Work> issue(const PlanOp& op) {
    const PlanCall& c = plan_.calls[op.call];
    ProcessGroup& pg = group_of(op);
    // The input at the arena's start, the output after it (schedule.h's step_bytes).
    char* const out_at = arena_.data() + aligned(op.in_count * dtype_size(c.dtype));
    const TensorView in = op.in_count > 0 || !one_sided(op.type)
                              ? dev_.view(arena_.data(), op.in_count, c.dtype)
                              : TensorView{};
    const TensorView out = op.out_count > 0 || !one_sided(op.type)
                               ? dev_.view(out_at, op.out_count, c.dtype)
                               : TensorView{};
    CommonOptions common;
    common.timeout = timeout_;
    common.async_op = false;
    return run_op(kReplayOps, op.type, ReplayCall{pg, op, c, in, out, common});
  }

  // gather's output and scatter's input exist on the root only.
  static bool one_sided(OpType t) {
    const auto s = traits(t).sizes;
    return s == OpTraits::Sizes::RootOutputIsInputTimesN ||
           s == OpTraits::Sizes::RootInputIsOutputTimesN;
  }

  ProcessGroup& world_;
  const ReplayPlan& plan_;
  const std::vector<PlanOp>& ops_;
  const Millis timeout_;
  device::DeviceRuntime& dev_;
  std::vector<std::shared_ptr<ProcessGroup>> groups_;  // by plan group; null where not a member
  const Peak peak_;                                    // this rank's largest step: the arena's size
  device::Buffer arena_;  // every step's buffers (schedule.h), one step at a time
  std::vector<std::pair<size_t, std::shared_ptr<Work>>> batch_;
  Clock::TimePoint batch_start_;
  size_t arena_used_ = 0;
};

}  // namespace

RankTimes run_plan(ProcessGroup& world, const ReplayPlan& plan, const RunnerOptions& o) {
  if (static_cast<size_t>(world.size()) != plan.ranks.size())
    throw InvalidArgument(fmt::format("the replay plan is for {} ranks, the world has {}",
                                      plan.ranks.size(), world.size()));
  if (o.iters < 1 || o.warmup < 0) throw InvalidArgument("replay: -n must be >= 1 and -w >= 0");
  return Runner(world, plan, o).run(o);
}

std::vector<RankTimes> gather_times(ProcessGroup& world, const RankTimes& mine, Millis timeout) {
  const int n = world.size();
  int64_t len = static_cast<int64_t>(mine.op_us.size());
  std::vector<int64_t> lens(n);
  perf::all_gather_host(world, TensorView::cpu(&len, 1, DType::Int64),
                        TensorView::cpu(lens.data(), lens.size(), DType::Int64), timeout);
  const auto longest = static_cast<size_t>(*std::max_element(lens.begin(), lens.end()));
  std::vector<double> packed(longest + 1, 0), all(packed.size() * n);
  packed[0] = mine.pass_us;
  std::copy(mine.op_us.begin(), mine.op_us.end(), packed.begin() + 1);
  perf::all_gather_host(world, TensorView::cpu(packed.data(), packed.size(), DType::Float64),
                        TensorView::cpu(all.data(), all.size(), DType::Float64), timeout);
  std::vector<RankTimes> out;
  if (world.rank() != 0) return out;
  for (int r = 0; r < n; ++r) {
    const double* p = all.data() + static_cast<size_t>(r) * packed.size();
    RankTimes t;
    t.pass_us = p[0];
    t.op_us.assign(p + 1, p + 1 + lens[r]);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace collie::replay
