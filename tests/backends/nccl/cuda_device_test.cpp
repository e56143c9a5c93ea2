// CudaRuntime (the NCCL group's device seam) on a real device: allocate (zeroed), fill through a
// host copy, device copy, event timer, graph capture and replay, memory report, description.
// Without a usable CUDA device every case skips with "no CUDA device" and CUDA's reason.
#include "backends/nccl/cuda_device.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace collie {
namespace {

class CudaDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
      GTEST_SKIP() << "no CUDA device: "
                   << (e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount found 0");
    }
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    rt_ = std::make_unique<CudaRuntime>(0, stream_);
  }
  void TearDown() override {
    rt_.reset();
    if (stream_) cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<CudaRuntime> rt_;
};

TEST_F(CudaDevice, AllocateFillAndCopyBack) {
  device::Buffer a = rt_->allocate(4096), b = rt_->allocate(4096);
  std::vector<uint8_t> zeros(4096, 1);
  rt_->copy_to_host(zeros.data(), a.data(), 4096);
  EXPECT_EQ(zeros, std::vector<uint8_t>(4096, 0));
  std::vector<uint8_t> in(4096), out(4096);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7);
  rt_->copy_to_device(a.data(), in.data(), in.size());
  rt_->copy(b.data(), a.data(), in.size());
  rt_->copy_to_host(out.data(), b.data(), out.size());
  EXPECT_EQ(in, out);
  EXPECT_GE(rt_->memory().peak_allocated_bytes, 8192);
  EXPECT_GT(rt_->memory().total_bytes, 0);
}

TEST_F(CudaDevice, EventTimerMeasuresStreamWork) {
  device::Buffer a = rt_->allocate(64 << 20), b = rt_->allocate(64 << 20);
  auto t = rt_->timer();
  t->mark();
  for (int i = 0; i < 4; ++i) rt_->copy(b.data(), a.data(), a.bytes());
  t->mark();
  EXPECT_GT(t->elapsed_us(0, 1), 0.0);
}

TEST_F(CudaDevice, CapturedCopiesReplayOnLaunch) {
  device::Buffer a = rt_->allocate(256), b = rt_->allocate(256);
  std::vector<uint8_t> in(256, 42), out(256, 0);
  rt_->copy_to_device(a.data(), in.data(), in.size());
  rt_->begin_capture();
  rt_->copy(b.data(), a.data(), 256);
  auto g = rt_->end_capture();
  rt_->copy_to_host(out.data(), b.data(), 256);
  EXPECT_EQ(out, std::vector<uint8_t>(256, 0));  // captured, not run
  g->launch();
  rt_->synchronize();
  rt_->copy_to_host(out.data(), b.data(), 256);
  EXPECT_EQ(out, in);
}

TEST_F(CudaDevice, DescribesModelAndBusId) {
  const device::Description d = rt_->describe();
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.bus_id.size(), 10u) << d.bus_id;  // "0000:0f:00"
  EXPECT_FALSE(d.model.empty());
  EXPECT_EQ(rt_->device().type, DeviceType::CUDA);
  EXPECT_FALSE(rt_->host_accessible());
}

// Runs everywhere: the state CUDA reports on this host turns into one line or none.
TEST(CudaState, UnavailableLineIsEmptyExactlyWhenADeviceIsVisible) {
  const device::CudaState s = query_cuda_state();
  const std::string line = device::cuda_unavailable_line(s);
  EXPECT_EQ(line.empty(), s.count_ok && s.count > 0) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace collie
