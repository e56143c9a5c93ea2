#include "comm/capabilities.h"

#include <fmt/format.h>

namespace collie {

std::string Capabilities::why_unsupported(const OpCall& call) const {
  const TensorView& t = checked_tensor(call);
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
