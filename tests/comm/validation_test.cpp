// ProcessGroup::submit's capability check for ops without tensors: a barrier is checked on the
// group's device (its runtime's), not on an empty view's default (CPU). A CUDA-only backend such as
// NCCL declares barrier on CUDA only and must accept pg.barrier().
#include <gtest/gtest.h>

#include "comm/process_group.h"
#include "core/error.h"
#include "perf/staged_runtime.h"

namespace collie {
namespace {

GroupInfo one_rank() {
  GroupInfo g;
  g.backend = "onedevice";
  return g;
}

// Declares every op on one device only and records the device each call reached it with.
class OneDeviceBackend final : public ProcessGroup {
 public:
  explicit OneDeviceBackend(DeviceType dev)
      : ProcessGroup(one_rank()), runtime_(0, Device{dev, dev == DeviceType::CUDA ? 0 : -1}) {
    caps_.backend = "onedevice";
    for (auto& o : caps_.ops)
      o = OpCapability{dev == DeviceType::CPU, dev == DeviceType::CUDA, kAllDTypeBits,
                       kAllReduceOpBits};
  }
  const Capabilities& capabilities() const override { return caps_; }
  device::DeviceRuntime& device_runtime() override { return runtime_; }
  void undeclare(OpType t) { caps_.at(t) = OpCapability{}; }
  std::vector<DeviceType> reached;

 protected:
  std::shared_ptr<Work> run(const OpCall& call) override {
    reached.push_back(call.input.device.type);
    auto w = std::make_shared<Work>(call.type, call.seq, call.timeout);
    w->complete();
    return w;
  }

 private:
  Capabilities caps_;
  testing::StagedRuntime runtime_;
};

TEST(Validation, ABarrierIsCheckedOnTheGroupsDeviceNotOnCpu) {
  OneDeviceBackend cuda_only(DeviceType::CUDA);
  EXPECT_NO_THROW(cuda_only.barrier()->wait());
  EXPECT_EQ(cuda_only.reached, std::vector<DeviceType>{DeviceType::CUDA});
  OneDeviceBackend cpu_only(DeviceType::CPU);
  EXPECT_NO_THROW(cpu_only.barrier()->wait());
  EXPECT_EQ(cpu_only.reached, std::vector<DeviceType>{DeviceType::CPU});
}

TEST(Validation, ABarrierTheBackendDoesNotDeclareIsRefusedBeforeItRuns) {
  OneDeviceBackend pg(DeviceType::CUDA);
  pg.undeclare(OpType::Barrier);
  try {
    pg.barrier();
    FAIL() << "an undeclared barrier was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("does not support barrier on cuda"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(pg.reached.empty());
}

}  // namespace
}  // namespace collie
