// The CUDA device policy without a GPU: one line per missing thing, never a bare error code;
// LOCAL_RANK modulo the visible devices; COLLIE_CUDA_DEVICE range checks.
#include "device/cuda_choice.h"

#include <gtest/gtest.h>

namespace collie::device {
namespace {

CudaState with_devices(int n) {
  CudaState s;
  s.driver_version = 13000;
  s.runtime_version = 13000;
  s.count_ok = true;
  s.count = n;
  return s;
}

TEST(CudaChoice, NoDriverIsOneLineNamingTheDriver) {
  CudaState s;  // driver_version 0: libcuda not loadable
  s.runtime_version = 13000;
  s.error_name = "cudaErrorInsufficientDriver";
  const std::string line = cuda_unavailable_line(s);
  EXPECT_EQ(line.rfind("no CUDA driver: ", 0), 0u) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.find("cudaError"), std::string::npos) << line;
}

TEST(CudaChoice, AMissingLibraryComesFirst) {
  // The loader's line (backends/nccl/dynload.h) is the reason; nothing else was asked.
  CudaState s;
  s.library_error = "libnccl.so.2 could not be loaded: not found; ...";
  EXPECT_EQ(cuda_unavailable_line(s), s.library_error);
  s = with_devices(2);
  s.library_error = "libcudart.so.13 could not be loaded: not found; ...";
  EXPECT_EQ(cuda_unavailable_line(s), s.library_error);
}

TEST(CudaChoice, OldDriverNamesBothVersions) {
  CudaState s = with_devices(0);
  s.driver_version = 12040;
  s.count_ok = false;
  EXPECT_EQ(cuda_unavailable_line(s),
            "CUDA driver 12.4 is older than the CUDA runtime 13.0 collie was built with; update "
            "the driver or rebuild collie against an older CUDA toolkit");
}

TEST(CudaChoice, NoVisibleDeviceNamesCudaVisibleDevices) {
  CudaState s = with_devices(0);
  s.count_ok = false;
  s.error_name = "cudaErrorNoDevice";
  s.visible_devices = "";
  EXPECT_EQ(cuda_unavailable_line(s),
            "no visible CUDA device (CUDA_VISIBLE_DEVICES=''); check nvidia-smi and "
            "CUDA_VISIBLE_DEVICES");
  EXPECT_NE(cuda_unavailable_line(with_devices(0)).find("CUDA_VISIBLE_DEVICES unset"),
            std::string::npos);
  EXPECT_EQ(cuda_unavailable_line(with_devices(2)), "");
}

TEST(CudaChoice, LocalRankModuloVisibleDevices) {
  EXPECT_EQ(choose_cuda_device(4, 2, 7, std::nullopt, std::nullopt).index, 2);
  EXPECT_EQ(choose_cuda_device(4, 5, 7, std::nullopt, std::nullopt).index, 1);
  EXPECT_EQ(choose_cuda_device(2, std::nullopt, 3, std::nullopt, std::nullopt).index, 1);
}

TEST(CudaChoice, ExplicitIndexOutOfRangeIsOneLine) {
  const DeviceChoice c = choose_cuda_device(2, 0, 0, std::string("5"), std::string("2,3"));
  EXPECT_EQ(c.index, -1);
  EXPECT_EQ(c.error,
            "CUDA device index 5 is out of range: 2 visible devices (CUDA_VISIBLE_DEVICES='2,3'); "
            "set COLLIE_CUDA_DEVICE to 0..1 or unset it");
  EXPECT_EQ(choose_cuda_device(2, 0, 0, std::string("1"), std::nullopt).index, 1);
  EXPECT_NE(choose_cuda_device(2, 0, 0, std::string("x1"), std::nullopt).error, "");
}

}  // namespace
}  // namespace collie::device
