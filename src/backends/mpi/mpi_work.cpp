#include "backends/mpi/mpi_work.h"

#include <fmt/format.h>

#include "backends/mpi/mpi_runtime.h"
#include "core/error.h"

namespace collie::mpi {

MpiWork::MpiWork(OpType op, uint64_t seq, Millis timeout, std::string label)
    : Work(op, seq, timeout), label_(std::move(label)) {}

MpiWork::~MpiWork() {
  std::lock_guard<std::mutex> lk(test_mu_);
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
    auto lk = Runtime::get().lock();
    rc =
        MPI_Testall(static_cast<int>(requests.size()), requests.data(), &flag, MPI_STATUSES_IGNORE);
  }
  if (rc != MPI_SUCCESS) {
    mpi_done_ = true;
    complete(std::make_exception_ptr(BackendError(fmt::format(
        "{}: MPI reported an error: {}; the communicator may be unusable, check the other "
        "ranks' logs",
        label_, error_string(rc)))));
    return true;
  }
  if (!flag) return false;
  mpi_done_ = true;
  try {
    if (finish) finish();
  } catch (...) {
    complete(std::current_exception());
    return true;
  }
  complete();
  return true;
}

}  // namespace collie::mpi
