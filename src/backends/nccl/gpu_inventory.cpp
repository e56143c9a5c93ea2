// Registers the CUDA runtime's GPU inventory for the env probe (device/gpu_inventory.h): model,
// count, bus ids and ECC mode of the visible devices, driver / runtime / NCCL versions.
#include "device/gpu_inventory.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <set>
#include <vector>

#include "backends/nccl/cuda_device.h"

namespace collie {
namespace {

// "a, b, c", or "a" when every entry is the same.
std::string join_or_one(const std::vector<std::string>& v) {
  if (!v.empty() && std::set<std::string>(v.begin(), v.end()).size() == 1) return v.front();
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

device::GpuInventory inventory() {
  device::GpuInventory f;
  const device::CudaState s = query_cuda_state();
  if (!s.library_error.empty()) {  // libcudart or libnccl not found on this host
    f["gpu.cuda"] = s.library_error;
    return f;
  }
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess)
    f["gpu.nccl"] = fmt::format("{}.{}.{}", nccl / 10000, (nccl % 10000) / 100, nccl % 100);
  f["gpu.cuda_runtime"] = device::cuda_version_string(s.runtime_version);
  if (s.driver_version == 0) {
    f["gpu.cuda"] = "no CUDA driver";
    return f;
  }
  f["gpu.cuda_driver"] = device::cuda_version_string(s.driver_version);
  if (const std::string why = device::cuda_unavailable_line(s); !why.empty()) {
    f["gpu.cuda"] = why;
    return f;
  }
  f["gpu.cuda"] = "ok";
  f["gpu.count"] = std::to_string(s.count);
  std::vector<std::string> models, buses, ecc;
  for (int d = 0; d < s.count; ++d) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) {
      cudaGetLastError();
      models.push_back("?");
      buses.push_back("?");
      ecc.push_back("?");
      continue;
    }
    models.push_back(p.name);
    buses.push_back(fmt::format("{:04x}:{:02x}:{:02x}", p.pciDomainID, p.pciBusID, p.pciDeviceID));
    ecc.push_back(p.ECCEnabled ? "on" : "off");
  }
  f["gpu.models"] = join_or_one(models);
  f["gpu.bus_ids"] = join_or_one(buses);
  f["gpu.ecc"] = join_or_one(ecc);
  return f;
}

const bool kRegistered = device::register_gpu_inventory(inventory);

}  // namespace
}  // namespace collie
