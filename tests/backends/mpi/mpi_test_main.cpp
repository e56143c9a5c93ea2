// gtest main for tests run under mpirun: the application initializes MPI itself (the backend
// must accept that), only rank 0 prints, and any failing rank fails the job. With
// COLLIE_TEST_MPI_INIT=collie the backend initializes MPI instead, as in collie's own tools (at
// the level COLLIE_MPI_THREAD_LEVEL asks for, single by default).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

#include "backends/mpi/mpi_runtime.h"
#include "backends/mpi/mpi_test_data.h"

namespace {
// Ranks other than 0 print only their failures, prefixed with the rank.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed()) {
      std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank_, r.file_name() ? r.file_name() : "?",
                   r.line_number(), r.summary());
    }
  }

 private:
  int rank_;
};
}  // namespace

int main(int argc, char** argv) {
  if (collie::test::mpi_initialized_by_collie()) {
    collie::MpiRuntime::get();
  } else {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  }
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));
  }
  int rc = RUN_ALL_TESTS();
  collie::test::release_world();
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && worst != rc) std::fprintf(stderr, "a test failed on another rank\n");
  MPI_Finalize();
  return worst;
}
