#pragma once
// MpiWork: one submitted op as a set of non-blocking MPI requests. It advances only when polled
// (Work::wait and is_completed call progress(), which runs MPI_Testall), then runs the op's
// finishing step (Avg's division) and completes.
// Ownership: holds the op's scratch buffers and count arrays; if it is destroyed while MPI still
// owns them (an op abandoned after a timeout) they are deliberately leaked, because MPI may still
// write into them and a nonblocking collective cannot be cancelled.
// Thread safety: progress() may run on several threads; one tests at a time, the others return.
#include <mpi.h>

#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "comm/work.h"

namespace collie::mpi {

class MpiWork : public Work {
 public:
  // `label` prefixes error messages, e.g. "[Rank 1] mpi all_reduce #7 (group 0 'default_pg')".
  MpiWork(OpType op, uint64_t seq, Millis timeout, std::string label);
  ~MpiWork() override;

  // Filled by the group before the first poll.
  std::vector<MPI_Request> requests;
  std::vector<std::byte> scratch;  // PreMulSum's scaled copy of the input
  std::vector<int> counts;         // all_to_all with splits: 4 * size ints
  std::function<void()> finish;    // runs once after MPI completes successfully
  const std::string& label() const { return label_; }

  // Tests the requests once; returns true when the Work is completed.
  bool poll();

 protected:
  void progress() override { poll(); }
  bool needs_polling() const override { return true; }

 private:
  const std::string label_;
  std::mutex test_mu_;
  bool mpi_done_ = false;
};

}  // namespace collie::mpi
