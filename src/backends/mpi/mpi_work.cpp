#include "backends/mpi/mpi_work.h"

#include <fmt/format.h>

#include "backends/mpi/mpi_runtime.h"
#include "core/error.h"

namespace collie {

MpiWork::MpiWork(OpType op, uint64_t seq, Millis timeout, int rank,
                 const std::shared_ptr<const std::string>& group, bool async)
    : Work(op, seq, timeout),
      rank_(rank),
      group_(async ? group : nullptr),
      group_label_(group.get()) {}

std::string MpiWork::label() const {
  return fmt::format("[Rank {}] mpi {} #{} {}", rank_, op_name(op()), seq(), *group_label_);
}

MpiWork::~MpiWork() {
  // No lock: a Work is destroyed by the last holder of it, so no poll() can be running.
  if (!mpi_done_ && (!scratch.empty() || !counts.empty())) {
    // MPI may still read or write these; see the header.
    new std::vector<std::byte>(std::move(scratch));
    new std::vector<int>(std::move(counts));
  }
}

bool MpiWork::poll() {
  std::unique_lock<std::mutex> mine(test_mu_, std::try_to_lock);
  if (!mine.owns_lock()) return false;  // another thread is testing; it will complete the Work
  if (mpi_done_) return true;
  int flag = 0;
  int rc = MPI_SUCCESS;
  {
    auto lk = MpiRuntime::get().lock();
    rc = MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
  }
  if (rc != MPI_SUCCESS) {
    mpi_done_ = true;
    complete(std::make_exception_ptr(BackendError(fmt::format(
        "{}: MPI reported an error: {}; the communicator may be unusable, check the other "
        "ranks' logs",
        label(), mpi_error_string(rc)))));
    return true;
  }
  if (!flag) return false;
  mpi_done_ = true;
  run_finish();
  return true;
}

void MpiWork::mpi_returned() {
  mpi_done_ = true;  // no poll() can run: nobody else has this Work yet (header)
  run_finish();
}

void MpiWork::run_finish() {
  try {
    if (finish) finish();
  } catch (...) {
    complete(std::current_exception());
    return;
  }
  complete();
}

}  // namespace collie
