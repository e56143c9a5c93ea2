// Overhead of collie's MPI backend over raw Open MPI, measured in the same mpirun: for each size,
// alternating trials of a raw MPI_Allreduce / MPI_Alltoall loop (and the non-blocking
// MPI_Iallreduce / MPI_Ialltoall + MPI_Wait the backend is built on) and the same op through the
// ProcessGroup API. Prints per size the time per op (max over ranks) and the ratios.
// Built and run by overhead_mpi.sh.
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "comm/registry.h"

namespace {

double time_loop(MPI_Comm comm, int iters, const std::function<void()>& op) {
  for (int i = 0; i < std::max(2, iters / 10); ++i) op();
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) op();
  double us = (MPI_Wtime() - t0) * 1e6 / iters, worst = 0;
  MPI_Allreduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, comm);
  return worst;
}

// The fastest trial: on a shared host, interference only ever adds time, so the minimum is the
// best estimate of each loop's own cost (the median is printed too, to show the spread).
double fastest(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
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
        "# ranks %d, %d alternating trials per point; us/op = fastest trial, max over "
        "ranks; med_ratio = ratio of the medians\n",
        size, trials);
    std::printf("%-10s %10s %9s %9s %9s %7s %7s %9s %9s\n", "op", "bytes", "raw_us", "iraw_us",
                "collie_us", "ratio", "iratio", "delta_us", "med_ratio");
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
      std::vector<double> t_raw, t_iraw, t_collie;
      for (int t = 0; t < trials; ++t) {
        t_raw.push_back(time_loop(raw, iters, raw_op));
        t_iraw.push_back(time_loop(raw, iters, iraw_op));
        t_collie.push_back(time_loop(raw, iters, collie_op));
      }
      const double r = fastest(t_raw), ir = fastest(t_iraw), c = fastest(t_collie);
      if (rank == 0) {
        std::printf("%-10s %10zu %9.2f %9.2f %9.2f %7.3f %7.3f %+9.2f %9.3f\n", name,
                    n * sizeof(float), r, ir, c, c / r, c / ir, c - r,
                    median(t_collie) / median(t_raw));
      }
    }
  }
  pg.reset();
  MPI_Comm_free(&raw);
  MPI_Finalize();
  return 0;
}
