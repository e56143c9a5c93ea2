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
inline constexpr std::array<OpType, kNumOpTypes> kAllOpTypes = {
    OpType::Send,          OpType::Recv,      OpType::Broadcast, OpType::AllReduce,
    OpType::Reduce,        OpType::AllGather, OpType::Gather,    OpType::Scatter,
    OpType::ReduceScatter, OpType::AllToAll,  OpType::Barrier};

// "send", "recv", "broadcast", "all_reduce", "reduce", "all_gather", "gather", "scatter",
// "reduce_scatter", "all_to_all", "barrier".
COLLIE_API std::string_view op_name(OpType t);
COLLIE_API bool is_p2p(OpType t);
COLLIE_API bool has_reduce_op(OpType t);  // all_reduce, reduce, reduce_scatter
COLLIE_API bool has_root(OpType t);       // broadcast, reduce, gather, scatter

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
  uint64_t seq = 0;  // collective seq (or p2p seq for send/recv), assigned by submit()
};

}  // namespace collie
