#pragma once
// CudaRuntime: the DeviceRuntime (device/device_runtime.h) of an NCCL group — its CUDA device and
// stream. Buffers are cudaMalloc'd on the group's device; copies, timer events and graph capture
// use the group's stream, so they are ordered with the group's collectives. Host copies wait for
// the stream (they stage data outside timed loops); device copies do not.
// Every CUDA failure becomes an exception naming the call, the device and CUDA's error name and
// text (DeviceError for out of memory, BackendError otherwise).
// Ownership: the group owns the runtime; the stream is the group's and outlives the runtime.
// Thread safety: as DeviceRuntime.
#include <cuda_runtime_api.h>

#include <atomic>

#include "device/cuda_choice.h"
#include "device/device_runtime.h"

namespace collie {

class CudaRuntime final : public device::DeviceRuntime {
 public:
  // REQUIRES: `device` is a valid index; `stream` belongs to it and outlives this runtime.
  CudaRuntime(int device, cudaStream_t stream);

  collie::Device device() const override { return collie::Device{DeviceType::CUDA, device_}; }
  bool host_accessible() const override { return false; }
  bool asynchronous() const override { return true; }
  device::Description describe() const override { return description_; }
  device::MemoryReport memory() const override;
  device::Buffer allocate(size_t bytes) override;
  void copy_to_device(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void synchronize() override;
  std::unique_ptr<device::Timer> timer() override;
  bool supports_graphs() const override { return true; }
  void begin_capture() override;
  std::unique_ptr<device::CapturedGraph> end_capture() override;
  // The group's stream, for work a caller must order with the group's ops (tests hold it with a
  // host function to make an op that cannot complete).
  cudaStream_t stream() const { return stream_; }

 protected:
  void release(void* data, size_t bytes) noexcept override;

 private:
  const int device_;
  cudaStream_t stream_;
  device::Description description_;
  std::atomic<int64_t> live_{0};
  std::atomic<int64_t> peak_{0};
};

// What the CUDA runtime reports about drivers and devices on this host (never throws).
device::CudaState query_cuda_state();

// Throws BackendError "<what> on CUDA device <dev>: <name>: <text>" unless e == cudaSuccess.
void check_cuda(cudaError_t e, const char* what, int dev);

}  // namespace collie
