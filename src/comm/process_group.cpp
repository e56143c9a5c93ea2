#include "comm/process_group.h"

#include <fmt/format.h>

#include <numeric>

#include "core/error.h"

namespace collie {
namespace {

[[noreturn]] void bad(const ProcessGroup& pg, const OpCall& c, const std::string& what) {
  throw InvalidArgument(fmt::format("[Rank {}] {} (group {} '{}', {}): {}", pg.rank(),
                                    op_name(c.type), pg.info().name, pg.info().desc,
                                    pg.backend_name(), what));
}

void check_buffer(const ProcessGroup& pg, const OpCall& c, const TensorView& t, const char* which) {
  if (t.numel > 0 && t.data == nullptr) bad(pg, c, fmt::format("{} buffer is null", which));
  if (t.shape.ndim > 0 && t.shape.numel() != static_cast<int64_t>(t.numel)) {
    bad(pg, c,
        fmt::format("{} shape {} does not match its {} elements", which, t.shape.to_string(),
                    t.numel));
  }
}

void check_splits(const ProcessGroup& pg, const OpCall& c, std::span<const int64_t> s, size_t numel,
                  const char* which) {
  if (s.empty()) return;
  if (static_cast<int>(s.size()) != pg.size()) {
    bad(pg, c, fmt::format("{} has {} entries for a group of {}", which, s.size(), pg.size()));
  }
  int64_t sum = 0;
  for (int64_t v : s) {
    if (v < 0) bad(pg, c, fmt::format("{} has a negative count", which));
    sum += v;
  }
  if (static_cast<size_t>(sum) != numel) {
    bad(pg, c, fmt::format("{} add up to {} elements but the buffer has {}", which, sum, numel));
  }
}

}  // namespace

ProcessGroup::ProcessGroup(GroupInfo info) : info_(std::move(info)) {
  if (info_.global_ranks.empty()) {
    info_.global_ranks.resize(info_.size);
    std::iota(info_.global_ranks.begin(), info_.global_ranks.end(), 0);
  }
}

ProcessGroup::~ProcessGroup() = default;

size_t per_rank_count(const OpCall& c, int n) {
  switch (traits(c.type).count) {
    case OpTraits::Count::Input:
      return c.input.numel;
    case OpTraits::Count::Output:
      return c.output.numel;
    case OpTraits::Count::InputPerRank:
      return c.input.numel / static_cast<size_t>(n);
    case OpTraits::Count::None:
      return 0;
  }
  return 0;
}

void ProcessGroup::validate(const OpCall& c) const {
  const int n = size();
  if (has_root(c.type) && (c.root < 0 || c.root >= n)) {
    bad(*this, c, fmt::format("root {} is outside the group of {} ranks", c.root, n));
  }
  if (is_p2p(c.type)) {
    if (c.peer < 0 || c.peer >= n) {
      bad(*this, c, fmt::format("peer {} is outside the group of {} ranks", c.peer, n));
    }
    if (c.peer == rank()) bad(*this, c, "peer is this rank itself");
  }
  check_buffer(*this, c, c.input, "input");
  check_buffer(*this, c, c.output, "output");
  const bool has_in = c.input.data != nullptr || c.input.numel > 0;
  const bool has_out = c.output.data != nullptr || c.output.numel > 0;
  if (has_in && has_out) {
    if (c.input.dtype != c.output.dtype) {
      bad(*this, c,
          fmt::format("input dtype {} differs from output dtype {}", dtype_name(c.input.dtype),
                      dtype_name(c.output.dtype)));
    }
    if (c.input.device.type != c.output.device.type) {
      bad(*this, c, "input and output are on different devices");
    }
  }
  const size_t in = c.input.numel, out = c.output.numel, un = static_cast<size_t>(n);
  switch (traits(c.type).sizes) {
    case OpTraits::Sizes::OutputIsInputTimesN:
      if (out != in * un) {
        bad(*this, c,
            fmt::format("output has {} elements, expected size*input = {}*{}", out, n, in));
      }
      break;
    case OpTraits::Sizes::RootOutputIsInputTimesN:
      if (rank() == c.root && out != in * un) {
        bad(*this, c, fmt::format("root output has {} elements, expected {}*{}", out, n, in));
      }
      break;
    case OpTraits::Sizes::RootInputIsOutputTimesN:
      if (rank() == c.root && in != out * un) {
        bad(*this, c, fmt::format("root input has {} elements, expected {}*{}", in, n, out));
      }
      break;
    case OpTraits::Sizes::InputIsOutputTimesN:
      if (in != out * un) {
        bad(*this, c,
            fmt::format("input has {} elements, expected size*output = {}*{}", in, n, out));
      }
      break;
    case OpTraits::Sizes::Exchange:
      if (c.input_splits.empty() != c.output_splits.empty()) {
        bad(*this, c, "give both input_splits and output_splits, or neither");
      }
      if (c.input_splits.empty()) {
        if (in != out || in % un != 0) {
          bad(*this, c,
              fmt::format("input ({}) and output ({}) must be equal and divisible by {}", in, out,
                          n));
        }
      }
      check_splits(*this, c, c.input_splits, in, "input_splits");
      check_splits(*this, c, c.output_splits, out, "output_splits");
      break;
    case OpTraits::Sizes::InPlace:
    case OpTraits::Sizes::None:
      break;
  }
  const OpTraits& t = traits(c.type);
  // A gather's non-root ranks may pass no input at all; a barrier has no buffer but still runs.
  const bool skip_caps =
      t.sizes == OpTraits::Sizes::RootOutputIsInputTimesN && rank() != c.root && !has_in;
  if (!skip_caps && (has_in || has_out || t.sizes == OpTraits::Sizes::None)) {
    const Capabilities& caps = capabilities();
    if (!caps.supports(c)) bad(*this, c, caps.why_unsupported(c));
  }
}

std::shared_ptr<Work> ProcessGroup::submit(OpCall call) {
  if (traits(call.type).sizes == OpTraits::Sizes::InPlace) call.output = call.input;
  validate(call);
  if (call.timeout == kUseGroupTimeout) call.timeout = info_.timeout;
  // One thread at a time submits (the contract above): a load and a store, no locked
  // instruction; other threads only read the counters.
  std::atomic<uint64_t>& counter = is_p2p(call.type) ? p2p_seq_ : coll_seq_;
  call.seq = counter.load(std::memory_order_relaxed) + 1;
  counter.store(call.seq, std::memory_order_relaxed);
  auto work = run(call);
  work->set_context(rank());
  return work;
}

namespace {
OpCall base_call(OpType t, TensorView in, TensorView out, const CommonOptions& o) {
  OpCall c;
  c.type = t;
  c.input = in;
  c.output = out;
  c.timeout = o.timeout;
  c.async_op = o.async_op;
  c.in_metrics = o.in_metrics;
  return c;
}
}  // namespace

std::shared_ptr<Work> ProcessGroup::send(TensorView t, int dst, const P2POptions& o) {
  OpCall c = base_call(OpType::Send, t, t, o);
  c.peer = dst;
  c.tag = o.tag;
  return submit(c);
}
std::shared_ptr<Work> ProcessGroup::recv(TensorView t, int src, const P2POptions& o) {
  OpCall c = base_call(OpType::Recv, t, t, o);
  c.peer = src;
  c.tag = o.tag;
  return submit(c);
}
std::shared_ptr<Work> ProcessGroup::broadcast(TensorView t, const BroadcastOptions& o) {
  OpCall c = base_call(OpType::Broadcast, t, t, o);
  c.root = o.root;
  return submit(c);
}
std::shared_ptr<Work> ProcessGroup::all_reduce(TensorView t, const AllReduceOptions& o) {
  OpCall c = base_call(OpType::AllReduce, t, t, o);
  c.reduce_op = o.op;
  c.premul_factor = o.premul_factor;
  return submit(c);
}
std::shared_ptr<Work> ProcessGroup::reduce(TensorView t, const ReduceOptions& o) {
  OpCall c = base_call(OpType::Reduce, t, t, o);
  c.reduce_op = o.op;
  c.premul_factor = o.premul_factor;
  c.root = o.root;
  return submit(c);
}
std::shared_ptr<Work> ProcessGroup::all_gather(TensorView in, TensorView out,
                                               const AllGatherOptions& o) {
  return submit(base_call(OpType::AllGather, in, out, o));
}
std::shared_ptr<Work> ProcessGroup::gather(TensorView in, TensorView out, const GatherOptions& o) {
  OpCall c = base_call(OpType::Gather, in, out, o);
  c.root = o.root;
  return submit(c);
}
std::shared_ptr<Work> ProcessGroup::scatter(TensorView in, TensorView out,
                                            const ScatterOptions& o) {
  OpCall c = base_call(OpType::Scatter, in, out, o);
  c.root = o.root;
  return submit(c);
}
std::shared_ptr<Work> ProcessGroup::reduce_scatter(TensorView in, TensorView out,
                                                   const ReduceScatterOptions& o) {
  OpCall c = base_call(OpType::ReduceScatter, in, out, o);
  c.reduce_op = o.op;
  c.premul_factor = o.premul_factor;
  return submit(c);
}
std::shared_ptr<Work> ProcessGroup::all_to_all(TensorView in, TensorView out,
                                               const AllToAllOptions& o) {
  OpCall c = base_call(OpType::AllToAll, in, out, o);
  c.input_splits = o.input_splits;
  c.output_splits = o.output_splits;
  return submit(c);
}
std::shared_ptr<Work> ProcessGroup::barrier(const BarrierOptions& o) {
  // No tensors, but the barrier runs on the group's device, and the capability check reads the
  // device from the views: an empty view says CPU, which a CUDA-only backend (NCCL) refuses.
  TensorView none;
  none.device = device_runtime().device();
  return submit(base_call(OpType::Barrier, none, none, o));
}

}  // namespace collie
