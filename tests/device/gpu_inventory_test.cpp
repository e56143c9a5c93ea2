// The env probe's GPU inventory never fails: every build reports gpu.cuda (the CUDA build's
// provider says "no CUDA driver" on a host without one, a build without CUDA says so).
#include "device/gpu_inventory.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace collie::device {
namespace {

TEST(GpuInventory, AlwaysReportsTheCudaStatus) {
  const GpuInventory inv = gpu_inventory();
  ASSERT_TRUE(inv.count("gpu.cuda")) << "no gpu.cuda field";
  const std::string& status = inv.at("gpu.cuda");
  EXPECT_FALSE(status.empty());
  if (status == "ok") {
    EXPECT_TRUE(inv.count("gpu.count") && inv.count("gpu.models") && inv.count("gpu.bus_ids") &&
                inv.count("gpu.ecc") && inv.count("gpu.cuda_driver"));
  } else if (!std::filesystem::exists("/proc/driver/nvidia/version") &&
             status != "not built with CUDA") {
    EXPECT_EQ(status, "no CUDA driver");  // this CI: no NVIDIA driver installed
  }
}

}  // namespace
}  // namespace collie::device
