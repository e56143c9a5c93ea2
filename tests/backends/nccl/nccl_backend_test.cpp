// The NCCL backend: its declared table, the clear error without a CUDA device, and on a GPU the
// conformance suite (tests/backends/conformance) in a one-rank group: every declared combination
// except point-to-point (needs a second rank, i.e. a second GPU) on device buffers, checked
// against the oracle, and every undeclared one refused. Skips with CUDA's reason without a device.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "backends/conformance/conformance.h"
#include "comm/registry.h"
#include "core/error.h"
#include "store/hash_store.h"

namespace collie::test {
namespace {

// Empty when a CUDA device is usable, else CUDA's reason.
std::string no_device_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return cudaGetErrorString(e);
  return n == 0 ? "0 devices" : "";
}

std::shared_ptr<ProcessGroup> make_nccl(int rank = 0, int size = 1) {
  GroupInfo info;
  info.backend = "nccl";
  info.rank = rank;
  info.size = size;
  info.timeout = Millis(20000);
  info.store = std::make_shared<HashStore>();
  return find_backend("nccl")->create(BackendArgs{info, nullptr});
}

TEST(NcclBackend, DeclaresCudaOnlyWithoutBitwiseReductions) {
  const BackendRegistration* reg = find_backend("nccl");
  ASSERT_NE(reg, nullptr);
  EXPECT_NE(reg->version.find("NCCL 2."), std::string::npos) << reg->version;
  EXPECT_NE(reg->version.find("CUDA"), std::string::npos) << reg->version;
  for (OpType t : kAllOpTypes) {
    EXPECT_TRUE(reg->capabilities.supports(t, DeviceType::CUDA)) << op_name(t);
    EXPECT_FALSE(reg->capabilities.supports(t, DeviceType::CPU)) << op_name(t);
    if (!has_reduce_op(t)) continue;
    EXPECT_FALSE(reg->capabilities.supports(t, DeviceType::CUDA, DType::Int32, ReduceOp::BXor));
    EXPECT_TRUE(reg->capabilities.supports(t, DeviceType::CUDA, DType::BFloat16, ReduceOp::Avg));
  }
}

TEST(NcclBackend, WithoutDeviceRaisesOneLineDeviceError) {
  const std::string why = no_device_reason();
  if (why.empty()) GTEST_SKIP() << "a CUDA device is present; this case needs a machine without";
  try {
    make_nccl();
    FAIL() << "creating an NCCL group without a CUDA device did not throw";
  } catch (const DeviceError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[Rank 0] nccl"), std::string::npos) << msg;
    // Names what is missing (a library, the driver or a device), never a bare CUDA error code.
    const bool names_it = msg.find("could not be loaded") != std::string::npos ||
                          msg.find("no CUDA driver") != std::string::npos ||
                          msg.find("no visible CUDA device") != std::string::npos ||
                          msg.find("CUDA driver ") != std::string::npos;
    EXPECT_TRUE(names_it) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(NcclBackend, DeclaredTableRejectsHostBuffers) {
  // ProcessGroup::submit rejects calls with this text before the backend runs; no device needed.
  const Capabilities& caps = find_backend("nccl")->capabilities;
  OpCall c;
  c.type = OpType::AllReduce;
  float x = 0;
  c.input = TensorView::cpu(&x, 1, DType::Float32);
  const std::string why = caps.why_unsupported(c);
  EXPECT_NE(why.find("nccl backend does not support all_reduce on cpu"), std::string::npos) << why;
}

// The conformance driver: every case on one GPU (one rank; with more GPUs, the run_ranks driver
// of gloo_conformance_test.cpp with backend "nccl" is the next step).
class NcclConformance : public ::testing::TestWithParam<size_t> {};

TEST_P(NcclConformance, OneGpu) {
  if (std::string why = no_device_reason(); !why.empty()) {
    GTEST_SKIP() << "no CUDA device: " << why;
  }
  static std::shared_ptr<ProcessGroup> pg = make_nccl();
  const testing::conformance::Case& c = testing::conformance::cases()[GetParam()];
  const testing::conformance::Outcome o = c.run(*pg, {.counts = {1, 7, 1001}});
  EXPECT_TRUE(o.ok()) << c.name << ": " << o.summary();
}

INSTANTIATE_TEST_SUITE_P(Cases, NcclConformance,
                         ::testing::Range(size_t{0}, testing::conformance::cases().size()),
                         [](const auto& info) {
                           return testing::conformance::cases()[info.param].name;
                         });

}  // namespace
}  // namespace collie::test
