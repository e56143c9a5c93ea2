#pragma once
// The policy of picking and explaining CUDA devices, as pure functions so it is tested without a
// GPU. The CUDA runtime calls live in backends/nccl/cuda_device.cpp, which feeds these.
// Thread-safe: pure functions.
#include <optional>
#include <string>

namespace collie::device {

// What the CUDA runtime said when asked for devices (cudaDriverGetVersion,
// cudaRuntimeGetVersion, cudaGetDeviceCount).
struct CudaState {
  // One line when libcudart or libnccl could not be loaded (backends/nccl/dynload.h); when set,
  // the rest was not asked and this is the reason CUDA is unavailable.
  std::string library_error;
  int driver_version = 0;   // 0: no driver installed (libcuda could not be loaded)
  int runtime_version = 0;  // the runtime collie was built with, e.g. 13000
  bool count_ok = false;    // cudaGetDeviceCount returned cudaSuccess
  int count = 0;
  std::string error_name;                      // cudaGetErrorName of a failed cudaGetDeviceCount
  std::string error_text;                      // cudaGetErrorString of it
  std::optional<std::string> visible_devices;  // $CUDA_VISIBLE_DEVICES
};

// Empty when CUDA has at least one visible device; otherwise one line naming what is missing
// (libcudart or libnccl, no driver, a driver older than the runtime, no visible device) and what
// to do — never a bare
// CUDA error code.
std::string cuda_unavailable_line(const CudaState& s);

// "13.0" for 13000.
std::string cuda_version_string(int v);

struct DeviceChoice {
  int index = -1;     // valid when error is empty
  std::string error;  // one line when the requested index is out of range or malformed
};

// The device a rank uses among `count` visible ones (indices are CUDA's, after
// CUDA_VISIBLE_DEVICES): $COLLIE_CUDA_DEVICE when set (must be < count), else the launcher's local
// rank modulo count (several ranks share a device when there are more ranks than devices), else
// the global rank modulo count. REQUIRES: count > 0.
DeviceChoice choose_cuda_device(int count, std::optional<int> local_rank, int rank,
                                const std::optional<std::string>& explicit_index,
                                const std::optional<std::string>& visible_devices);

}  // namespace collie::device
