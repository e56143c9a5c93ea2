#include "backends/nccl/cuda_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "backends/nccl/dynload.h"
#include "core/atomic_max.h"
#include "core/error.h"

namespace collie {
namespace {

class EventTimer final : public device::Timer {
 public:
  EventTimer(int dev, cudaStream_t stream) : dev_(dev), stream_(stream) {}
  ~EventTimer() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  int mark() override {
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreate(&e), "cudaEventCreate (timer)", dev_);
    events_.push_back(e);
    check_cuda(cudaEventRecord(e, stream_), "cudaEventRecord (timer)", dev_);
    return static_cast<int>(events_.size()) - 1;
  }
  double elapsed_us(int a, int b) override {
    check_cuda(cudaEventSynchronize(events_.at(b)), "cudaEventSynchronize (timer)", dev_);
    float ms = 0.f;
    check_cuda(cudaEventElapsedTime(&ms, events_.at(a), events_.at(b)), "cudaEventElapsedTime",
               dev_);
    return static_cast<double>(ms) * 1000.0;
  }

 private:
  const int dev_;
  cudaStream_t stream_;
  std::vector<cudaEvent_t> events_;
};

class Graph final : public device::CapturedGraph {
 public:
  Graph(int dev, cudaStream_t stream, cudaGraph_t g) : dev_(dev), stream_(stream), graph_(g) {
    if (const cudaError_t e = cudaGraphInstantiate(&exec_, graph_, 0); e != cudaSuccess) {
      cudaGraphDestroy(graph_);
      check_cuda(e, "cudaGraphInstantiate", dev_);
    }
  }
  ~Graph() override {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
  }
  void launch() override { check_cuda(cudaGraphLaunch(exec_, stream_), "cudaGraphLaunch", dev_); }

 private:
  const int dev_;
  cudaStream_t stream_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

std::string format_bus_id(const cudaDeviceProp& p) {
  return fmt::format("{:04x}:{:02x}:{:02x}", p.pciDomainID, p.pciBusID, p.pciDeviceID);
}

}  // namespace

void check_cuda(cudaError_t e, const char* what, int dev) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // clear a sticky-free error so the next call is not blamed for it
  throw BackendError(fmt::format("{} on CUDA device {}: {}: {}; check nvidia-smi and the driver",
                                 what, dev, cudaGetErrorName(e), cudaGetErrorString(e)));
}

device::CudaState query_cuda_state() {
  device::CudaState s;
  // Both libraries first: the CUDA calls below would only say "shared object" errors without.
  for (auto lib : {dynload::Library::CudaRuntime, dynload::Library::Nccl}) {
    if (s.library_error.empty()) s.library_error = dynload::missing_line(lib);
  }
  if (!s.library_error.empty()) return s;
  cudaDriverGetVersion(&s.driver_version);
  cudaRuntimeGetVersion(&s.runtime_version);
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  s.count_ok = e == cudaSuccess;
  s.count = s.count_ok ? n : 0;
  if (!s.count_ok) {
    s.error_name = cudaGetErrorName(e);
    s.error_text = cudaGetErrorString(e);
    cudaGetLastError();
  }
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) s.visible_devices = v;
  return s;
}

CudaRuntime::CudaRuntime(int device, cudaStream_t stream) : device_(device), stream_(stream) {
  cudaDeviceProp p{};
  check_cuda(cudaGetDeviceProperties(&p, device_), "cudaGetDeviceProperties", device_);
  description_.index = device_;
  description_.bus_id = format_bus_id(p);
  description_.model = p.name;
}

device::MemoryReport CudaRuntime::memory() const {
  device::MemoryReport m;
  size_t free = 0, total = 0;
  if (cudaSetDevice(device_) == cudaSuccess && cudaMemGetInfo(&free, &total) == cudaSuccess) {
    m.free_bytes = static_cast<int64_t>(free);
    m.total_bytes = static_cast<int64_t>(total);
  } else {
    cudaGetLastError();
  }
  m.peak_allocated_bytes = peak_.load();
  return m;
}

device::Buffer CudaRuntime::allocate(size_t bytes) {
  const size_t n = (std::max<size_t>(bytes, 1) + 7) / 8 * 8;
  check_cuda(cudaSetDevice(device_), "cudaSetDevice", device_);
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, n);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    const device::MemoryReport m = memory();
    throw DeviceError(fmt::format(
        "CUDA device {} ({}) is out of memory: {} bytes asked, {} of {} bytes free; lower -e",
        device_, description_.model, n, m.free_bytes, m.total_bytes));
  }
  check_cuda(e, "cudaMalloc", device_);
  if (const cudaError_t z = cudaMemsetAsync(p, 0, n, stream_); z != cudaSuccess) {
    cudaFree(p);
    check_cuda(z, "cudaMemsetAsync", device_);
  }
  raise_max(peak_, live_ += static_cast<int64_t>(n));
  return device::Buffer(this, p, n);
}

void CudaRuntime::release(void* data, size_t bytes) noexcept {
  live_ -= static_cast<int64_t>(bytes);
  cudaSetDevice(device_);
  cudaFree(data);
}

void CudaRuntime::copy_to_device(void* dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  check_cuda(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_),
             "cudaMemcpyAsync (host to device)", device_);
  synchronize();  // the host memory may be reused as soon as this returns
}

void CudaRuntime::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  check_cuda(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_),
             "cudaMemcpyAsync (device to host)", device_);
  synchronize();
}

void CudaRuntime::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_),
             "cudaMemcpyAsync (device to device)", device_);
}

void CudaRuntime::synchronize() {
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", device_);
}

std::unique_ptr<device::Timer> CudaRuntime::timer() {
  return std::make_unique<EventTimer>(device_, stream_);
}

void CudaRuntime::begin_capture() {
  check_cuda(cudaSetDevice(device_), "cudaSetDevice", device_);
  // Thread-local: the watchdog and other threads may keep querying CUDA during the capture.
  check_cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
             "cudaStreamBeginCapture", device_);
}

std::unique_ptr<device::CapturedGraph> CudaRuntime::end_capture() {
  cudaGraph_t g = nullptr;
  check_cuda(cudaStreamEndCapture(stream_, &g), "cudaStreamEndCapture", device_);
  return std::make_unique<Graph>(device_, stream_, g);
}

}  // namespace collie
