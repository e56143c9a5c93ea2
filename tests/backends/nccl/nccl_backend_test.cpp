// The NCCL backend: its declared table, the clear error without a CUDA device, and on a GPU every
// declared combination in a one-rank group (device buffers, results checked on the host).
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "backends/backend_test_data.h"
#include "comm/registry.h"
#include "core/error.h"
#include "core/reduce_kernel.h"
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

// A device copy of a host buffer, copied back by to_host().
class DeviceBuffer {
 public:
  DeviceBuffer(const Buffer& host, DType d) : bytes_(host.size()), d_(d) {
    EXPECT_EQ(cudaMalloc(&ptr_, bytes_ ? bytes_ : 1), cudaSuccess);
    if (bytes_) cudaMemcpy(ptr_, host.data(), bytes_, cudaMemcpyHostToDevice);
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  TensorView view() const {
    TensorView t{ptr_, bytes_ / dtype_size(d_), d_, Device{DeviceType::CUDA, 0}, Shape{}};
    return t;
  }
  Buffer to_host() const {
    Buffer b(bytes_);
    if (bytes_) cudaMemcpy(b.data(), ptr_, bytes_, cudaMemcpyDeviceToHost);
    return b;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_;
  DType d_;
};

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
    // Names what is missing (driver or device), never a bare CUDA error code.
    const bool names_it = msg.find("no CUDA driver") != std::string::npos ||
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

// One rank: every declared (op, dtype, reduce op) except point-to-point (needs a second rank,
// i.e. a second GPU) runs on the device and matches the host reference.
TEST(NcclBackend, EveryDeclaredCombinationRunsOnOneGpu) {
  if (std::string why = no_device_reason(); !why.empty()) {
    GTEST_SKIP() << "no CUDA device: " << why;
  }
  auto pg = make_nccl();
  const Capabilities& caps = pg->capabilities();
  constexpr size_t kCount = 1001;
  int ran = 0;
  for (OpType t : kAllOpTypes) {
    if (is_p2p(t) || !caps.supports(t, DeviceType::CUDA)) continue;
    for (DType d : kAllDTypes) {
      for (ReduceOp r : kAllReduceOps) {
        if (!has_reduce_op(t) && r != ReduceOp::Sum) continue;
        if (!caps.supports(t, DeviceType::CUDA, d, r)) continue;
        SCOPED_TRACE(fmt::format("{} {} {}", op_name(t), dtype_name(d), reduce_op_name(r)));
        const Buffer in = values(d, kCount, 0);
        Buffer want = has_reduce_op(t) ? reduced(d, kCount, 1, r, 2.0) : in;
        DeviceBuffer a(in, d), b(Buffer(in.size()), d);
        AllReduceOptions ro;
        ro.op = r;
        ro.premul_factor = 2.0;
        std::shared_ptr<Work> w;
        switch (t) {
          case OpType::Broadcast:
            w = pg->broadcast(a.view());
            break;
          case OpType::AllReduce:
            w = pg->all_reduce(a.view(), ro);
            break;
          case OpType::Reduce: {
            ReduceOptions o;
            o.op = r;
            o.premul_factor = 2.0;
            w = pg->reduce(a.view(), o);
            break;
          }
          case OpType::AllGather:
            w = pg->all_gather(a.view(), b.view());
            break;
          case OpType::Gather:
            w = pg->gather(a.view(), b.view());
            break;
          case OpType::Scatter:
            w = pg->scatter(a.view(), b.view());
            break;
          case OpType::ReduceScatter: {
            ReduceScatterOptions o;
            o.op = r;
            o.premul_factor = 2.0;
            w = pg->reduce_scatter(a.view(), b.view(), o);
            break;
          }
          case OpType::AllToAll:
            w = pg->all_to_all(a.view(), b.view());
            break;
          case OpType::Barrier:
            w = pg->barrier();
            break;
          default:
            break;
        }
        ASSERT_NE(w, nullptr);
        w->wait(Millis(20000));
        ++ran;
        if (t == OpType::Barrier) continue;
        const bool in_place =
            t == OpType::Broadcast || t == OpType::AllReduce || t == OpType::Reduce;
        EXPECT_EQ(in_place ? a.to_host() : b.to_host(), want);
      }
    }
  }
  EXPECT_GT(ran, 100);
}

}  // namespace
}  // namespace collie::test
