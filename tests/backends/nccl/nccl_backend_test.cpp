// The NCCL backend: its declared table, the clear error without a CUDA device, and on a GPU the
// conformance suite (tests/backends/conformance) in a one-rank group: every declared combination
// except point-to-point (needs a second rank, i.e. a second GPU) on device buffers, checked
// against the oracle, and every undeclared one refused; and the timeout path: an op that cannot
// complete fails at its deadline, the communicator is aborted and the flight recorder dumped.
// Skips with CUDA's reason without a device.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "backends/conformance/conformance.h"
#include "backends/nccl/cuda_device.h"
#include "backends/nccl/dynload.h"
#include "comm/registry.h"
#include "core/error.h"
#include "debug/dump_service.h"
#include "stack/init.h"
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

// Holds a stream: a host function that returns once `open` is set (cudaLaunchHostFunc, looked up
// in the loaded runtime: collie itself never calls it).
struct StreamGate {
  std::atomic<bool> open{false};
  static void CUDART_CB hold(void* self) {
    while (!static_cast<StreamGate*>(self)->open.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  void close(cudaStream_t s) {
    using LaunchHostFunc = cudaError_t (*)(cudaStream_t, cudaHostFn_t, void*);
    auto launch = reinterpret_cast<LaunchHostFunc>(
        dynload::symbol(dynload::Library::CudaRuntime, "cudaLaunchHostFunc"));
    ASSERT_NE(launch, nullptr);
    ASSERT_EQ(launch(s, &StreamGate::hold, this), cudaSuccess);
  }
};

// One GPU cannot make a peer miss an op (NCCL refuses two ranks on one device), so the op is
// queued behind a held stream: it cannot complete, the Work must fail at its deadline with the
// TimeoutError that names it, the communicator is aborted (later ops fail at once), and the full
// stack (init_process_group) leaves a flight-recorder dump for `collie analyze`. The stream is
// let go a few seconds after the deadline, whatever happens, so an abort that waits for the
// device cannot hang the test. COLLIE_FR_DUMP_DIR (set by scripts/gpu_check.sh) keeps the dump.
TEST(NcclBackend, AnOpThatCannotCompleteTimesOutAndAbortsTheCommunicator) {
  if (std::string why = no_device_reason(); !why.empty()) {
    GTEST_SKIP() << "no CUDA device: " << why;
  }
  namespace fs = std::filesystem;
  const char* kept = std::getenv("COLLIE_FR_DUMP_DIR");
  const fs::path dir =
      kept && *kept ? fs::path(kept)
                    : fs::temp_directory_path() / fmt::format("collie_nccl_timeout_{}", ::getpid());
  fs::create_directories(dir);
  ::setenv("COLLIE_FR_DUMP_DIR", dir.c_str(), 1);  // before DumpService::global() reads it

  InitOptions o;
  o.backend = "nccl";
  o.rank = 0;
  o.world_size = 1;
  o.store = std::make_shared<HashStore>();
  o.timeout = Millis(60000);
  auto pg = init_process_group(o);
  device::Buffer buf = pg->device_runtime().allocate(1024 * sizeof(float));
  const TensorView v = pg->device_runtime().view(buf.data(), 1024, DType::Float32);

  const Millis op_timeout(2000);
  AllReduceOptions opts;
  opts.timeout = op_timeout;
  StreamGate gate;
  gate.close(dynamic_cast<CudaRuntime&>(pg->device_runtime()).stream());
  std::thread opener([&] {
    std::this_thread::sleep_for(op_timeout + std::chrono::seconds(3));
    gate.open = true;
  });
  const auto start = std::chrono::steady_clock::now();
  auto work = pg->all_reduce(v, opts);
  try {
    work->wait();
    ADD_FAILURE() << "an all_reduce behind a held stream completed";
  } catch (const TimeoutError& e) {
    const std::string msg = e.what();
    // NcclWork's own line ("... did not complete within 2000 ms; the communicator was aborted"),
    // or the watchdog's 500 ms later if ncclCommAbort waits for the held stream.
    EXPECT_NE(msg.find("all_reduce #"), std::string::npos) << msg;
    EXPECT_NE(msg.find("did not complete within 2000 ms"), std::string::npos) << msg;
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, op_timeout);
  opener.join();
  // The communicator is gone: the next op fails instead of queueing behind it.
  try {
    pg->all_reduce(v, opts)->wait();
    ADD_FAILURE() << "an op on an aborted communicator succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aborted"), std::string::npos) << e.what();
  }
  DumpService::global().flush(std::chrono::seconds(5));
  EXPECT_TRUE(fs::exists(dir / "collie_fr_rank_0.json")) << "no flight-recorder dump in " << dir;
  buf = device::Buffer();
  destroy_process_group(*pg);
  if (!(kept && *kept)) fs::remove_all(dir);
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
