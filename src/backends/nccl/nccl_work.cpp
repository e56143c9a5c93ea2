#include "backends/nccl/nccl_work.h"

#include <fmt/format.h>

#include "core/error.h"

namespace collie {

void NcclCommState::abort(const std::string& why) {
  std::lock_guard<std::mutex> lk(mu);
  if (aborted.load(std::memory_order_relaxed)) return;
  abort_reason = why;
  aborted.store(true, std::memory_order_release);
  ncclCommAbort(comm);
}

std::string NcclCommState::aborted_error(const std::string& label) const {
  return fmt::format("{}: the communicator was aborted ({}); create a new group", label,
                     abort_reason);
}

NcclWork::NcclWork(OpType op, uint64_t seq, Millis timeout, std::string label,
                   std::shared_ptr<NcclCommState> comm)
    : Work(op, seq, timeout),
      label_(std::move(label)),
      comm_(std::move(comm)),
      deadline_(std::chrono::steady_clock::now() + timeout) {
  cudaEventCreate(&start_);
  cudaEventCreate(&end_);
}

NcclWork::~NcclWork() {
  if (start_) cudaEventDestroy(start_);
  if (end_) cudaEventDestroy(end_);
}

float NcclWork::elapsed_ms() const {
  float ms = 0.f;
  cudaEventElapsedTime(&ms, start_, end_);
  return ms;
}

void NcclWork::progress() {
  std::unique_lock<std::mutex> mine(poll_mu_, std::try_to_lock);
  if (!mine.owns_lock()) return;
  const cudaError_t e = cudaEventQuery(end_);
  if (e == cudaSuccess) {
    complete();
    return;
  }
  if (e != cudaErrorNotReady) {
    complete(std::make_exception_ptr(BackendError(
        fmt::format("{}: CUDA error {}; check the device (nvidia-smi) and the other ranks' logs",
                    label_, cudaGetErrorString(e)))));
    return;
  }
  ncclResult_t async = ncclSuccess;
  {
    std::lock_guard<std::mutex> lk(comm_->mu);
    if (comm_->aborted) {
      complete(std::make_exception_ptr(BackendError(comm_->aborted_error(label_))));
      return;
    }
    ncclCommGetAsyncError(comm_->comm, &async);
  }
  if (async != ncclSuccess && async != ncclInProgress) {
    const std::string why =
        fmt::format("NCCL error {}: {}", ncclGetErrorString(async), ncclGetLastError(comm_->comm));
    comm_->abort(why);
    complete(std::make_exception_ptr(BackendError(fmt::format(
        "{}: {}; the communicator was aborted, check the peer ranks and NCCL_DEBUG=WARN output",
        label_, why))));
    return;
  }
  if (std::chrono::steady_clock::now() >= deadline_) {
    comm_->abort(fmt::format("{} timed out", label_));
    complete(std::make_exception_ptr(TimeoutError(fmt::format(
        "{} did not complete within {} ms; the communicator was aborted. Some rank may not have "
        "called it (set COLLIE_DEBUG=DETAIL, or run `collie analyze` on the flight-recorder "
        "dumps)",
        label_, timeout().count()))));
  }
}

}  // namespace collie
