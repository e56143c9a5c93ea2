// HostRuntime: zeroed aligned buffers, copies, timer marks, memory report, no graphs.
#include "device/host_runtime.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace collie::device {
namespace {

TEST(HostRuntime, BuffersAreZeroedAlignedAndCounted) {
  HostRuntime rt;
  {
    Buffer b = rt.allocate(13);
    ASSERT_NE(b.data(), nullptr);
    EXPECT_GE(b.bytes(), 13u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 8, 0u);
    for (size_t i = 0; i < b.bytes(); ++i) EXPECT_EQ(b.data()[i], 0);
    Buffer moved = std::move(b);
    EXPECT_EQ(b.data(), nullptr);
    EXPECT_GE(rt.memory().peak_allocated_bytes, 16);
  }
  EXPECT_NE(rt.allocate(0).data(), nullptr);  // never a null buffer
  const MemoryReport m = rt.memory();
  EXPECT_GT(m.total_bytes, 0);
  EXPECT_GE(m.free_bytes, 0);
}

TEST(HostRuntime, CopiesRoundTrip) {
  HostRuntime rt;
  Buffer a = rt.allocate(64), b = rt.allocate(64);
  std::vector<uint8_t> in(64), out(64);
  for (int i = 0; i < 64; ++i) in[i] = static_cast<uint8_t>(i * 3);
  rt.copy_to_device(a.data(), in.data(), 64);
  rt.copy(b.data(), a.data(), 64);
  rt.synchronize();
  rt.copy_to_host(out.data(), b.data(), 64);
  EXPECT_EQ(in, out);
}

TEST(HostRuntime, TimerMeasuresBetweenMarks) {
  HostRuntime rt;
  auto t = rt.timer();
  EXPECT_EQ(t->mark(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(t->mark(), 1);
  EXPECT_GE(t->elapsed_us(0, 1), 2000.0);
}

TEST(HostRuntime, DescribesHostMemoryAndRefusesGraphs) {
  HostRuntime rt;
  EXPECT_TRUE(rt.host_accessible());
  EXPECT_FALSE(rt.asynchronous());
  EXPECT_EQ(rt.device().type, DeviceType::CPU);
  const Description d = rt.describe();
  EXPECT_EQ(d.index, -1);
  EXPECT_EQ(d.bus_id, "cpu");
  EXPECT_EQ(d.model, "host memory");
  EXPECT_FALSE(rt.supports_graphs());
  EXPECT_THROW(rt.begin_capture(), DeviceError);
  float x = 0;
  const TensorView v = rt.view(&x, 1, DType::Float32);
  EXPECT_EQ(v.device, collie::Device{});
}

}  // namespace
}  // namespace collie::device
