#pragma once
// ProcessGroupNCCL: the ProcessGroup API over NCCL for CUDA device buffers.
//
// One CUDA stream per group; every op is enqueued on it between two timing events and returned as
// an NcclWork (polled with cudaEventQuery, aborted with ncclCommAbort past its deadline).
// send/recv use ncclSend/ncclRecv in a group; gather, scatter and all_to_all are built from grouped
// point-to-point calls, barrier is a one-element all_reduce. Avg maps to ncclAvg, PreMulSum to
// ncclRedOpCreatePreMulSum; bitwise reductions are not offered by NCCL and not declared.
// The unique id travels through the group's store ("nccl_unique_id").
// Device: $COLLIE_CUDA_DEVICE, else the launcher's local rank (LOCAL_RANK, ...) modulo the visible
// devices, else rank modulo them (device/cuda_choice.h). device_runtime() is the group's
// CudaRuntime (cuda_device.h): tools allocate, copy and time on the group's device and stream.
// Ops submitted while that stream is being captured into a CUDA graph return Works that are
// already complete; they run when the graph is launched.
// Thread safety: as ProcessGroup.
#include <cuda_runtime_api.h>

#include <memory>

#include "comm/process_group.h"

namespace collie {

class Env;
struct NcclCommState;

class ProcessGroupNCCL : public ProcessGroup {
 public:
  // Throws DeviceError (one line: no CUDA driver, no visible device, device index out of range),
  // BackendError when NCCL fails to start, StoreError/TimeoutError when the unique id does not
  // arrive in time.
  ProcessGroupNCCL(GroupInfo info, const Env& env);
  ~ProcessGroupNCCL() override;

  const Capabilities& capabilities() const override;
  void shutdown() override;
  static const Capabilities& declared_capabilities();
  device::DeviceRuntime& device_runtime() override { return *runtime_; }

 protected:
  std::shared_ptr<Work> run(const OpCall& call) override;

 private:
  std::string label(const OpCall& call) const;
  void enqueue(const OpCall& call);

  std::shared_ptr<NcclCommState> comm_;
  cudaStream_t stream_ = nullptr;
  void* scratch_ = nullptr;  // one float on the device for barrier
  std::unique_ptr<device::DeviceRuntime> runtime_;
  bool shut_down_ = false;
};

// One line naming what is missing when CUDA has no usable device (no driver, driver too old, no
// visible device), else empty (device/cuda_choice.h).
std::string cuda_unavailable_reason();

}  // namespace collie
