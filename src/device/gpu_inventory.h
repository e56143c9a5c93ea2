#pragma once
// GPU inventory for the env probe, without the probe seeing CUDA: the CUDA-aware module (the NCCL
// backend) registers a provider at static initialization; gpu_inventory() calls it. Fields
// ("gpu.cuda", "gpu.count", "gpu.models", "gpu.bus_ids", "gpu.ecc", "gpu.cuda_driver",
// "gpu.cuda_runtime", "gpu.nccl") are compared across ranks like every other env field.
// Never throws: a host without a driver reports gpu.cuda = "no CUDA driver", one without libcudart
// or libnccl the loader's line (backends/nccl/dynload.h).
// Thread safety: registration during static initialization; calls are read-only.
#include <functional>
#include <map>
#include <string>

namespace collie::device {

using GpuInventory = std::map<std::string, std::string>;

bool register_gpu_inventory(std::function<GpuInventory()> provider);
// {"gpu.cuda": "not built with CUDA"} when no provider is registered.
GpuInventory gpu_inventory();

}  // namespace collie::device
