#pragma once
// Reduction operators. Which ops a backend supports is declared in its capability table;
// band/bor/bxor are defined for integer dtypes only (enforced in ProcessGroup::submit).
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/export.h"

namespace collie {

enum class ReduceOp : uint8_t { Sum, Prod, Min, Max, Avg, BAnd, BOr, BXor, PreMulSum };

inline constexpr std::array<ReduceOp, 9> kAllReduceOps = {
    ReduceOp::Sum,  ReduceOp::Prod, ReduceOp::Min,  ReduceOp::Max,      ReduceOp::Avg,
    ReduceOp::BAnd, ReduceOp::BOr,  ReduceOp::BXor, ReduceOp::PreMulSum};

// "sum", "prod", "min", "max", "avg", "band", "bor", "bxor", "premul_sum".
COLLIE_API std::string_view reduce_op_name(ReduceOp op);
COLLIE_API std::optional<ReduceOp> parse_reduce_op(std::string_view s);
constexpr bool is_bitwise(ReduceOp op) {
  return op == ReduceOp::BAnd || op == ReduceOp::BOr || op == ReduceOp::BXor;
}

}  // namespace collie
