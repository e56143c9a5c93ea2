#pragma once
// HostRuntime: DeviceRuntime over host memory, for the host backends (gloo, mpi). Buffers are
// 8-byte aligned heap memory, copies are memcpy, the timer reads the steady clock, synchronize()
// has nothing to wait for (the caller waits on each Work), graphs are not supported.
// Thread safety: as DeviceRuntime; the peak counter is atomic.
#include <atomic>

#include "device/device_runtime.h"

namespace collie::device {

class HostRuntime final : public DeviceRuntime {
 public:
  collie::Device device() const override { return collie::Device{}; }
  bool host_accessible() const override { return true; }
  bool asynchronous() const override { return false; }
  Description describe() const override { return Description{}; }
  // Physical and available memory of the machine (sysconf), and this runtime's peak.
  MemoryReport memory() const override;
  Buffer allocate(size_t bytes) override;
  void copy_to_device(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void synchronize() override {}
  std::unique_ptr<Timer> timer() override;

 protected:
  void release(void* data, size_t bytes) noexcept override;

 private:
  std::atomic<int64_t> live_{0};
  std::atomic<int64_t> peak_{0};
};

}  // namespace collie::device
