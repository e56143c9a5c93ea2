// Overhead of collie's MPI backend over raw Open MPI, measured in the same mpirun: for each size,
// interleaved rounds (the order rotates every round) of a raw MPI_Allreduce / MPI_Alltoall block
// (and the non-blocking MPI_Iallreduce / MPI_Ialltoall + MPI_Wait the backend is built on) and
// the same op through the ProcessGroup API, every op timed on its own (max over ranks). Prints per
// size p50 and p90 of each side's samples and the ratios to the blocking raw call.
// Built and run by overhead_mpi.sh.
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "comm/registry.h"
#include "core/stats.h"

namespace {

// One block of `iters` ops, each timed on its own; returns every op's time, max over ranks (what
// the slowest rank waited), appended to `out`.
void time_block(MPI_Comm comm, int iters, const std::function<void()>& op,
                std::vector<double>& out) {
  std::vector<double> mine(static_cast<size_t>(iters)), worst(mine.size());
  MPI_Barrier(comm);
  for (int i = 0; i < iters; ++i) {
    const double t0 = MPI_Wtime();
    op();
    mine[static_cast<size_t>(i)] = (MPI_Wtime() - t0) * 1e6;
  }
  MPI_Allreduce(mine.data(), worst.data(), iters, MPI_DOUBLE, MPI_MAX, comm);
  out.insert(out.end(), worst.begin(), worst.end());
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const size_t max_bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (16u << 20);
  const int trials = argc > 2 ? std::atoi(argv[2]) : 5;
  MPI_Comm raw;
  MPI_Comm_dup(MPI_COMM_WORLD, &raw);
  collie::GroupInfo info;
  info.backend = "mpi";
  info.rank = rank;
  info.size = size;
  auto pg = collie::find_backend("mpi")->create(collie::BackendArgs{info, nullptr});

  if (rank == 0) {
    std::printf(
        "# ranks %d, %d interleaved rounds per point; per-op samples, max over ranks; ratios "
        "against the blocking raw MPI call\n",
        size, trials);
    std::printf("%-10s %10s %5s %8s %8s %8s %8s %8s %8s %7s %7s %7s %7s\n", "op", "bytes", "n",
                "raw p50", "iraw p50", "col p50", "raw p90", "iraw p90", "col p90", "c/r p50",
                "c/r p90", "c/i p50", "c/i p90");
  }
  for (const char* name : {"all_reduce", "all_to_all"}) {
    const bool ar = std::strcmp(name, "all_reduce") == 0;
    for (size_t bytes = 8 * static_cast<size_t>(size); bytes <= max_bytes; bytes *= 4) {
      const size_t n = bytes / sizeof(float) / size * size;
      std::vector<float> in(n, 1.0f), out(n);
      const int cnt = static_cast<int>(ar ? n : n / size);
      const int iters = static_cast<int>(std::clamp<size_t>((16u << 20) / bytes, 10, 1000));
      auto v_in = collie::TensorView::cpu(in.data(), n, collie::DType::Float32);
      auto v_out = collie::TensorView::cpu(out.data(), n, collie::DType::Float32);
      std::function<void()> raw_op, iraw_op, collie_op;
      if (ar) {
        raw_op = [&] { MPI_Allreduce(MPI_IN_PLACE, in.data(), cnt, MPI_FLOAT, MPI_SUM, raw); };
        iraw_op = [&] {
          MPI_Request r;
          MPI_Iallreduce(MPI_IN_PLACE, in.data(), cnt, MPI_FLOAT, MPI_SUM, raw, &r);
          MPI_Wait(&r, MPI_STATUS_IGNORE);
        };
        collie_op = [&] { pg->all_reduce(v_in)->wait(); };
      } else {
        raw_op = [&] { MPI_Alltoall(in.data(), cnt, MPI_FLOAT, out.data(), cnt, MPI_FLOAT, raw); };
        iraw_op = [&] {
          MPI_Request r;
          MPI_Ialltoall(in.data(), cnt, MPI_FLOAT, out.data(), cnt, MPI_FLOAT, raw, &r);
          MPI_Wait(&r, MPI_STATUS_IGNORE);
        };
        collie_op = [&] { pg->all_to_all(v_in, v_out)->wait(); };
      }
      const std::function<void()>* ops[] = {&raw_op, &iraw_op, &collie_op};
      std::vector<double> t[3];
      for (int k = 0; k < 3; ++k) time_block(raw, std::max(2, iters / 10), *ops[k], t[k]);  // warm
      for (auto& v : t) v.clear();
      const int block = std::max(5, iters / trials);
      for (int round = 0; round < trials; ++round)
        for (int k = 0; k < 3; ++k)
          time_block(raw, block, *ops[(k + round) % 3], t[(k + round) % 3]);
      if (rank == 0) {
        using collie::median, collie::percentile;
        const double r50 = median(t[0]), i50 = median(t[1]), c50 = median(t[2]);
        const double r90 = percentile(t[0], .9), i90 = percentile(t[1], .9),
                     c90 = percentile(t[2], .9);
        std::printf(
            "%-10s %10zu %5zu %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %7.3f %7.3f %7.3f %7.3f\n", name,
            n * sizeof(float), t[2].size(), r50, i50, c50, r90, i90, c90, c50 / r50, c90 / r90,
            c50 / i50, c90 / i90);
      }
    }
  }
  pg.reset();
  MPI_Comm_free(&raw);
  MPI_Finalize();
  return 0;
}
