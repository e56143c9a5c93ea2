#include "core/reduce_op.h"

namespace collie {

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Prod:
      return "prod";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Avg:
      return "avg";
    case ReduceOp::BAnd:
      return "band";
    case ReduceOp::BOr:
      return "bor";
    case ReduceOp::BXor:
      return "bxor";
    case ReduceOp::PreMulSum:
      return "premul_sum";
  }
  return "?";
}

std::optional<ReduceOp> parse_reduce_op(std::string_view s) {
  for (ReduceOp op : kAllReduceOps) {
    if (s == reduce_op_name(op)) return op;
  }
  if (s == "mulsum" || s == "premulsum") return ReduceOp::PreMulSum;
  return std::nullopt;
}

}  // namespace collie
