#include "device/gpu_inventory.h"

namespace collie::device {
namespace {

std::function<GpuInventory()>& provider() {
  static std::function<GpuInventory()> p;
  return p;
}

}  // namespace

bool register_gpu_inventory(std::function<GpuInventory()> p) {
  provider() = std::move(p);
  return true;
}

GpuInventory gpu_inventory() {
  if (!provider()) return {{"gpu.cuda", "not built with CUDA"}};
  try {
    return provider()();
  } catch (const std::exception& e) {
    return {{"gpu.cuda", std::string("inventory failed: ") + e.what()}};
  }
}

}  // namespace collie::device
