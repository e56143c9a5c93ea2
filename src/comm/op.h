#pragma once
// The vocabulary of operations. Every public ProcessGroup verb builds one OpCall, and every
// layer (desync checks, tracing, metrics, backends) sees that one struct, so a collective cannot
// skip a layer.
#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/export.h"
#include "core/reduce_op.h"
#include "core/tensor.h"
#include "core/timeout.h"

namespace collie {

enum class OpType : uint8_t {
  Send,
  Recv,
  Broadcast,
  AllReduce,
  Reduce,
  AllGather,
  Gather,
  Scatter,
  ReduceScatter,
  AllToAll,
  Barrier,
};
inline constexpr int kNumOpTypes = 11;

// What an op is: the one table every layer derives its behaviour from (validation, in-place
// calls, fingerprints, the flight recorder's and the Inspector's names, `collie info`).
// Adding an op: its OpType, one row here, its ProcessGroup verb (process_group.h), and one entry
// in each backend's op table (comm/op_table.h: the build fails until every backend has one).
struct OpTraits {
  // How many elements one rank contributes, from the call's buffers (fingerprints, desync).
  enum class Count : uint8_t { Input, Output, InputPerRank, None };
  // How input and output sizes must relate (n = group size).
  enum class Sizes : uint8_t {
    InPlace,                  // one buffer: output is input
    OutputIsInputTimesN,      // all_gather
    RootOutputIsInputTimesN,  // gather (the output is only the root's)
    RootInputIsOutputTimesN,  // scatter (the input is only the root's)
    InputIsOutputTimesN,      // reduce_scatter
    Exchange,                 // all_to_all: equal and divisible by n, or per-rank splits
    None,                     // barrier
  };
  // Bus bandwidth as NCCL Inspector computes it: bytes moved per message times `traffic_n`
  // ranks, times the algorithm factor.
  enum class BusFactor : uint8_t { TwoNMinus1OverN, NMinus1OverN, One, None };

  OpType type;
  std::string_view name;            // "all_reduce": op_name, flight recorder, metrics labels
  std::string_view inspector = "";  // NCCL Inspector's name ("AllReduce"), "" when none
  bool p2p = false;
  bool rooted = false;
  bool reduces = false;  // takes a ReduceOp
  Count count = Count::Input;
  Sizes sizes = Sizes::InPlace;
  bool splits = false;        // may carry per-rank input/output splits
  bool output_shape = false;  // its fingerprint describes the output buffer
  BusFactor bus = BusFactor::None;
  bool traffic_n = false;  // Inspector traffic is the message times the group size
};

inline constexpr std::array<OpTraits, kNumOpTypes> kOpTraits = {{
    {.type = OpType::Send,
     .name = "send",
     .inspector = "Send",
     .p2p = true,
     .bus = OpTraits::BusFactor::One},
    {.type = OpType::Recv,
     .name = "recv",
     .inspector = "Recv",
     .p2p = true,
     .bus = OpTraits::BusFactor::One},
    {.type = OpType::Broadcast,
     .name = "broadcast",
     .inspector = "Broadcast",
     .rooted = true,
     .bus = OpTraits::BusFactor::One},
    {.type = OpType::AllReduce,
     .name = "all_reduce",
     .inspector = "AllReduce",
     .reduces = true,
     .bus = OpTraits::BusFactor::TwoNMinus1OverN},
    {.type = OpType::Reduce,
     .name = "reduce",
     .inspector = "Reduce",
     .rooted = true,
     .reduces = true,
     .bus = OpTraits::BusFactor::One},
    {.type = OpType::AllGather,
     .name = "all_gather",
     .inspector = "AllGather",
     .sizes = OpTraits::Sizes::OutputIsInputTimesN,
     .bus = OpTraits::BusFactor::NMinus1OverN,
     .traffic_n = true},
    {.type = OpType::Gather,
     .name = "gather",
     .rooted = true,
     .sizes = OpTraits::Sizes::RootOutputIsInputTimesN},
    {.type = OpType::Scatter,
     .name = "scatter",
     .rooted = true,
     .count = OpTraits::Count::Output,
     .sizes = OpTraits::Sizes::RootInputIsOutputTimesN,
     .output_shape = true},
    {.type = OpType::ReduceScatter,
     .name = "reduce_scatter",
     .inspector = "ReduceScatter",
     .reduces = true,
     .count = OpTraits::Count::Output,
     .sizes = OpTraits::Sizes::InputIsOutputTimesN,
     .output_shape = true,
     .bus = OpTraits::BusFactor::NMinus1OverN,
     .traffic_n = true},
    {.type = OpType::AllToAll,
     .name = "all_to_all",
     .count = OpTraits::Count::InputPerRank,
     .sizes = OpTraits::Sizes::Exchange,
     .splits = true},
    {.type = OpType::Barrier,
     .name = "barrier",
     .count = OpTraits::Count::None,
     .sizes = OpTraits::Sizes::None},
}};

// Row i of the table describes OpType i.
consteval bool op_traits_in_order() {
  for (int i = 0; i < kNumOpTypes; ++i)
    if (static_cast<int>(kOpTraits[i].type) != i) return false;
  return true;
}
static_assert(op_traits_in_order(), "kOpTraits: one row per OpType, in OpType order");

constexpr const OpTraits& traits(OpType t) { return kOpTraits[static_cast<int>(t)]; }

inline constexpr std::array<OpType, kNumOpTypes> kAllOpTypes = [] {
  std::array<OpType, kNumOpTypes> a{};
  for (int i = 0; i < kNumOpTypes; ++i) a[i] = kOpTraits[i].type;
  return a;
}();

// "send", "recv", "broadcast", "all_reduce", "reduce", "all_gather", "gather", "scatter",
// "reduce_scatter", "all_to_all", "barrier".
constexpr std::string_view op_name(OpType t) { return traits(t).name; }
constexpr bool is_p2p(OpType t) { return traits(t).p2p; }
// all_reduce, reduce, reduce_scatter
constexpr bool has_reduce_op(OpType t) { return traits(t).reduces; }
// broadcast, reduce, gather, scatter
constexpr bool has_root(OpType t) { return traits(t).rooted; }

// One operation as submitted. Buffers follow torch's "into tensor" conventions:
//   send/recv, broadcast, all_reduce, reduce: input == output, `count` elements (in place).
//   all_gather: input count, output size*count (rank r's input lands at r*count).
//   gather: like all_gather, output used on root only.  scatter: input size*count on root.
//   reduce_scatter: input size*count, output count.    barrier: no buffers.
//   all_to_all: input and output size*count, or per-rank element counts in the splits.
struct OpCall {
  OpType type = OpType::Barrier;
  TensorView input;
  TensorView output;
  ReduceOp reduce_op = ReduceOp::Sum;
  double premul_factor = 1.0;             // PreMulSum: inputs are multiplied by this before summing
  int root = -1;                          // group rank; broadcast/reduce/gather/scatter
  int peer = -1;                          // group rank; send (destination) / recv (source)
  int tag = 0;                            // send/recv
  std::span<const int64_t> input_splits;  // all_to_all: elements sent to each rank
  std::span<const int64_t> output_splits;  // all_to_all: elements received from each rank
  Millis timeout = kUseGroupTimeout;       // resolved to the group timeout by submit()
  bool async_op = false;                   // backends may run inline when false
  bool in_metrics = true;                  // CommonOptions::in_metrics
  uint64_t seq = 0;  // collective seq (or p2p seq for send/recv), assigned by submit()
};

}  // namespace collie
