#pragma once
// ProcessGroupNCCL: the ProcessGroup API over NCCL for CUDA device buffers.
//
// One CUDA stream per group; every op is enqueued on it between two timing events and returned as
// an NcclWork (polled with cudaEventQuery, aborted with ncclCommAbort past its deadline).
// send/recv use ncclSend/ncclRecv in a group; gather, scatter and all_to_all are built from grouped
// point-to-point calls, barrier is a one-element all_reduce. Avg maps to ncclAvg, PreMulSum to
// ncclRedOpCreatePreMulSum; bitwise reductions are not offered by NCCL and not declared.
// The unique id travels through the group's store ("nccl_unique_id").
// Device: LOCAL_RANK (or the launcher's local rank) modulo the visible devices, else rank.
// Thread safety: as ProcessGroup.
#include <cuda_runtime_api.h>

#include <memory>

#include "comm/process_group.h"

namespace collie {
class Env;
}

namespace collie::nccl {

struct CommState;

class ProcessGroupNCCL : public ProcessGroup {
 public:
  // Throws BackendError "no CUDA device/driver" when CUDA reports none, BackendError when NCCL
  // fails to start, StoreError/TimeoutError when the unique id does not arrive in time.
  ProcessGroupNCCL(GroupInfo info, const Env* env);
  ~ProcessGroupNCCL() override;

  const Capabilities& capabilities() const override;
  void shutdown() override;
  static const Capabilities& declared_capabilities();

 protected:
  std::shared_ptr<Work> run(const OpCall& call) override;

 private:
  std::string label(const OpCall& call) const;
  void enqueue(const OpCall& call);

  std::shared_ptr<CommState> comm_;
  cudaStream_t stream_ = nullptr;
  void* scratch_ = nullptr;  // one float on the device for barrier
  bool shut_down_ = false;
};

// "no CUDA device/driver: <reason>" when CUDA has no usable device, else empty.
std::string cuda_unavailable_reason();

}  // namespace collie::nccl
