#include "comm/capabilities.h"

#include <fmt/format.h>

namespace collie {

bool Capabilities::supports(OpType t, DeviceType dev) const {
  const auto& c = at(t);
  return dev == DeviceType::CUDA ? c.cuda : c.cpu;
}

bool Capabilities::supports(OpType t, DeviceType dev, DType d) const {
  return supports(t, dev) && (t == OpType::Barrier || (at(t).dtypes & bit(d)) != 0);
}

bool Capabilities::supports(OpType t, DeviceType dev, DType d, ReduceOp r) const {
  if (!supports(t, dev, d)) return false;
  if (!has_reduce_op(t)) return true;
  if (is_bitwise(r) && is_floating(d)) return false;
  return (at(t).reduce_ops & bit(r)) != 0;
}

std::string Capabilities::why_unsupported(const OpCall& call) const {
  const TensorView& t = call.input.data ? call.input : call.output;
  const DeviceType dev = t.device.type;
  if (!supports(call.type, dev)) {
    return fmt::format("{} backend does not support {} on {} (see `collie info`)", backend,
                       op_name(call.type), device_type_name(dev));
  }
  if (call.type == OpType::Barrier) return {};
  if (!supports(call.type, dev, t.dtype)) {
    return fmt::format("{} backend does not support {} with dtype {} on {} (see `collie info`)",
                       backend, op_name(call.type), dtype_name(t.dtype), device_type_name(dev));
  }
  if (!supports(call.type, dev, t.dtype, call.reduce_op)) {
    return fmt::format(
        "{} backend does not support {} with reduce op {} on {} {} (see `collie info`)", backend,
        op_name(call.type), reduce_op_name(call.reduce_op), dtype_name(t.dtype),
        device_type_name(dev));
  }
  return {};
}

}  // namespace collie
