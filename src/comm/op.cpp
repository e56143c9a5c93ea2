#include "comm/op.h"

namespace collie {

std::string_view op_name(OpType t) {
  switch (t) {
    case OpType::Send:
      return "send";
    case OpType::Recv:
      return "recv";
    case OpType::Broadcast:
      return "broadcast";
    case OpType::AllReduce:
      return "all_reduce";
    case OpType::Reduce:
      return "reduce";
    case OpType::AllGather:
      return "all_gather";
    case OpType::Gather:
      return "gather";
    case OpType::Scatter:
      return "scatter";
    case OpType::ReduceScatter:
      return "reduce_scatter";
    case OpType::AllToAll:
      return "all_to_all";
    case OpType::Barrier:
      return "barrier";
  }
  return "?";
}

bool is_p2p(OpType t) { return t == OpType::Send || t == OpType::Recv; }

bool has_reduce_op(OpType t) {
  return t == OpType::AllReduce || t == OpType::Reduce || t == OpType::ReduceScatter;
}

bool has_root(OpType t) {
  return t == OpType::Broadcast || t == OpType::Reduce || t == OpType::Gather ||
         t == OpType::Scatter;
}

}  // namespace collie
