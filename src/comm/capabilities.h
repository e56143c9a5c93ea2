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
  // Inline: ProcessGroup::submit asks for every op (a few loads and compares).
  bool supports(OpType t, DeviceType dev) const {
    const OpCapability& c = at(t);
    return dev == DeviceType::CUDA ? c.cuda : c.cpu;
  }
  bool supports(OpType t, DeviceType dev, DType d) const {
    return supports(t, dev) && (t == OpType::Barrier || (at(t).dtypes & bit(d)) != 0);
  }
  bool supports(OpType t, DeviceType dev, DType d, ReduceOp r) const {
    if (!supports(t, dev, d)) return false;
    if (!has_reduce_op(t)) return true;
    if (is_bitwise(r) && is_floating(d)) return false;
    return (at(t).reduce_ops & bit(r)) != 0;
  }
  // The call's op on its tensor's device and dtype, with its reduce op: why_unsupported(call)
  // is empty exactly when this is true.
  bool supports(const OpCall& call) const {
    const TensorView& t = checked_tensor(call);
    return supports(call.type, t.device.type, t.dtype, call.reduce_op);
  }
  // Empty when the call is supported, otherwise a one-line reason naming backend, op, device,
  // dtype and reduce op, pointing at `collie info`.
  std::string why_unsupported(const OpCall& call) const;

 private:
  // The tensor whose device and dtype are checked: the input, or the output when there is none.
  static const TensorView& checked_tensor(const OpCall& call) {
    return call.input.data ? call.input : call.output;
  }
};

}  // namespace collie
