// Raw Open MPI baseline for scripts/bench/overhead.sh BACKEND=mpi: straight MPI calls, nothing
// from collie. Run under mpirun.
// Usage: raw_mpi_allreduce MIN_BYTES MAX_BYTES FACTOR ITERS WARMUP
// Rank 0 prints "<bytes> <iteration> <us>" per timed all_reduce (float sum, in place), the
// slowest rank's time of each iteration, timed the way collie perf times one iteration: a
// barrier, then back-to-back blocking MPI_Allreduce calls, each timed from its start to its
// return, as an MPI user calls it (MPI_IN_PLACE, the communicator dup'd once).
// RAW_MPI_THREAD=multiple initializes with MPI_THREAD_MULTIPLE, =serialized with
// MPI_THREAD_SERIALIZED; the default (or =single) is MPI_Init.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const char* threads = std::getenv("RAW_MPI_THREAD");
  if (threads != nullptr && std::string(threads) != "single") {
    const std::string t(threads);
    const int want = t == "multiple" ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED;
    int provided = 0;
    MPI_Init_thread(&argc, &argv, want, &provided);
  } else {
    MPI_Init(&argc, &argv);
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc != 6) {
    if (rank == 0) std::fprintf(stderr, "usage: %s MIN MAX FACTOR ITERS WARMUP\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  const long min_b = std::atol(argv[1]), max_b = std::atol(argv[2]), factor = std::atol(argv[3]);
  const int iters = std::atoi(argv[4]), warmup = std::atoi(argv[5]);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  std::vector<double> us(static_cast<size_t>(iters)), worst(us.size());
  for (long bytes = min_b; bytes <= max_b; bytes *= factor) {
    const int count = static_cast<int>(bytes / static_cast<long>(sizeof(float)));
    std::vector<float> buf(static_cast<size_t>(count), 1.0f);
    auto one = [&] { MPI_Allreduce(MPI_IN_PLACE, buf.data(), count, MPI_FLOAT, MPI_SUM, comm); };
    for (int i = 0; i < warmup; ++i) one();
    MPI_Barrier(comm);
    for (int i = 0; i < iters; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      one();
      us[static_cast<size_t>(i)] =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    }
    MPI_Reduce(us.data(), worst.data(), iters, MPI_DOUBLE, MPI_MAX, 0, comm);
    if (rank == 0)
      for (int i = 0; i < iters; ++i)
        std::printf("%ld %d %.3f\n", bytes, i, worst[static_cast<size_t>(i)]);
    if (factor <= 1) break;
  }
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return 0;
}
