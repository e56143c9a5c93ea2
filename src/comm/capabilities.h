#pragma once
// Capabilities: what a backend declares it can run, per op and device. The table is the single
// source for argument checks in ProcessGroup::submit and for `collie info`.
#include <array>
#include <cstdint>
#include <string>

#include "comm/op.h"
#include "core/export.h"

namespace collie {

struct OpCapability {
  bool cpu = false;
  bool cuda = false;
  uint32_t dtypes = 0;      // bit (1 << int(DType))
  uint32_t reduce_ops = 0;  // bit (1 << int(ReduceOp)); only for ops with a reduce op
};

constexpr uint32_t bit(DType d) { return 1u << static_cast<int>(d); }
constexpr uint32_t bit(ReduceOp r) { return 1u << static_cast<int>(r); }
inline constexpr uint32_t kAllDTypeBits = (1u << kAllDTypes.size()) - 1;
inline constexpr uint32_t kAllReduceOpBits = (1u << kAllReduceOps.size()) - 1;

struct COLLIE_API Capabilities {
  std::string backend;
  std::array<OpCapability, kNumOpTypes> ops{};

  OpCapability& at(OpType t) { return ops[static_cast<int>(t)]; }
  const OpCapability& at(OpType t) const { return ops[static_cast<int>(t)]; }
  bool supports(OpType t, DeviceType dev) const;
  bool supports(OpType t, DeviceType dev, DType d) const;
  bool supports(OpType t, DeviceType dev, DType d, ReduceOp r) const;
  // Empty when the call is supported, otherwise a one-line reason naming backend, op, device,
  // dtype and reduce op, pointing at `collie info`.
  std::string why_unsupported(const OpCall& call) const;
};

}  // namespace collie
