#pragma once
// MpiWork: one submitted op. An async op holds a non-blocking MPI request and advances only when
// polled (Work::wait and is_completed call progress(), which runs MPI_Test), then runs the op's
// finishing step (Avg's division) and completes. A synchronous op is completed by the group
// before run() returns.
// Ownership: holds the op's scratch buffers and count arrays; if it is destroyed while MPI still
// owns them (an op abandoned after a timeout) they are deliberately leaked, because MPI may still
// write into them and a nonblocking collective cannot be cancelled.
// Thread safety: progress() may run on several threads; one tests at a time, the others return.
#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/work.h"

namespace collie {

class MpiWork : public Work {
 public:
  // `group` is the group's part of error messages ("(group 0 'default_pg')"); formatting the
  // label only when an error needs it keeps the hot path free of string work. An async op's
  // Work may outlive its group and keeps the label alive; a synchronous op's Work only points
  // at it (no reference to count on the op's path): REQUIRES for !async that label() is called
  // only while the group lives (run() formats every error of a synchronous op before it
  // returns).
  MpiWork(OpType op, uint64_t seq, Millis timeout, int rank,
          const std::shared_ptr<const std::string>& group, bool async);
  ~MpiWork() override;

  // Filled by the group before the first poll.
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<std::byte> scratch;  // PreMulSum's scaled copy of the input
  std::vector<int> counts;         // all_to_all with splits: 4 * size ints
  std::function<void()> finish;    // runs once after MPI completes successfully
  // "[Rank 1] mpi all_reduce #7 (group 0 'default_pg')".
  std::string label() const;

  // Async ops: tests the request once; returns true when the Work is completed.
  bool poll();
  // Synchronous ops: the blocking MPI call returned successfully; finish and complete.
  // Precondition: no other thread has the Work yet (run() calls it before returning the Work),
  // so it takes no lock.
  void mpi_returned();

 protected:
  void progress() override { poll(); }
  bool needs_polling() const override { return true; }

 private:
  void run_finish();

  const int rank_;
  const std::shared_ptr<const std::string> group_;  // async ops only
  const std::string* const group_label_;            // *group_, or the group's own
  std::mutex test_mu_;
  bool mpi_done_ = false;
};

}  // namespace collie
