// Per-op time of all_reduce on Gloo (2 processes over loopback) with the debug layer at
// COLLIE_DEBUG=OFF, INFO, DETAIL and DETAIL sampled, against the raw backend (the innermost group,
// no wrappers) measured in the same processes. Run through scripts/bench/detail_overhead.sh.
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "comm/wrapper.h"
#include "debug/fake_backend.h"
#include "metrics/tracing_process_group.h"
#include "support/multiprocess.h"

namespace {

using namespace collie;

struct Size {
  size_t bytes;
  int iters;
};
const std::vector<Size> kSizes = {{8, 3000}, {64 << 10, 600}, {16 << 20, 12}};

double per_op_us(ProcessGroup& pg, std::vector<float>& buf, size_t count, int iters) {
  TensorView t = TensorView::cpu(buf.data(), count, DType::Float32);
  for (int i = 0; i < std::max(3, iters / 20); ++i) pg.all_reduce(t)->wait();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) pg.all_reduce(t)->wait();
  const auto us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start);
  return us.count() / iters;
}

// Returns "raw,wrapped" per size (rank 0), best of `reps` alternating blocks.
std::string measure(testing::RankContext& ctx, int reps) {
  std::vector<float> buf((16 << 20) / sizeof(float), 1.0f);
  ProcessGroup& raw = backend_of(*ctx.pg);
  std::string out;
  for (const Size& s : kSizes) {
    const size_t count = std::max<size_t>(1, s.bytes / sizeof(float));
    double best_raw = 1e30, best_wrapped = 1e30;
    for (int r = 0; r < reps; ++r) {
      best_raw = std::min(best_raw, per_op_us(raw, buf, count, s.iters));
      best_wrapped = std::min(best_wrapped, per_op_us(*ctx.pg, buf, count, s.iters));
    }
    out += fmt::format("{} {} {}\n", s.bytes, best_raw, best_wrapped);
  }
  return out;
}

// Tracing cost alone, without network noise: an 8-element all_reduce on a backend that completes
// at once, raw vs wrapped by the always-on TracingProcessGroup (flight recorder + watchdog).
void tracing_only(int reps) {
  auto backend = std::make_shared<testing::FakeBackend>(
      testing::fake_info(0, 2, std::make_shared<HashStore>(), Millis(60000)));
  auto traced = std::make_shared<TracingProcessGroup>(backend);
  std::vector<float> buf(8);
  const int iters = 200000;
  double raw = 1e30, wrapped = 1e30;
  for (int r = 0; r < reps; ++r) {
    raw = std::min(raw, per_op_us(*backend, buf, buf.size(), iters));
    wrapped = std::min(wrapped, per_op_us(*traced, buf, buf.size(), iters));
  }
  std::printf("# tracing layer alone (in-process backend that completes at once), per op:\n");
  std::printf("#   raw %.3f us, traced %.3f us, overhead %.3f us\n", raw, wrapped, wrapped - raw);
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 3;
  if (argc > 2 && std::string(argv[2]) == "--tracing-only") {
    tracing_only(reps);
    return 0;
  }
  const std::string out_file = fmt::format("/tmp/collie_detail_bench_{}.txt", ::getpid());
  struct Mode {
    const char* name;
    const char* debug;
    const char* sample;
  };
  const std::vector<Mode> modes = {{"OFF", "OFF", "1"},
                                   {"INFO", "INFO", "1"},
                                   {"DETAIL", "DETAIL", "1"},
                                   {"DETAIL/16", "DETAIL", "16"}};
  std::map<std::string, std::map<size_t, std::pair<double, double>>> res;
  for (const Mode& m : modes) {
    ::setenv("COLLIE_DEBUG", m.debug, 1);
    ::setenv("COLLIE_DESYNC_SAMPLE", m.sample, 1);
    testing::RunOptions o;
    o.mode = testing::Mode::Processes;
    o.deadline = Millis(300000);
    o.group_timeout = Millis(60000);
    auto r = testing::run_ranks(
        2,
        [&](testing::RankContext& ctx) {
          const std::string text = measure(ctx, reps);
          if (ctx.rank == 0) std::ofstream(out_file) << text;
        },
        o);
    if (!r.ok()) {
      std::fprintf(stderr, "%s: %s\n", m.name, r.summary().c_str());
      return 1;
    }
    std::ifstream f(out_file);
    size_t bytes;
    double raw, wrapped;
    while (f >> bytes >> raw >> wrapped) res[m.name][bytes] = {raw, wrapped};
  }
  std::printf(
      "# all_reduce float32 on gloo, 2 processes over loopback; per-op time in us (best of %d)\n",
      reps);
  std::printf(
      "# ratio = mode / raw backend measured in the same run; DETAIL vs OFF in the last columns\n");
  std::printf("%10s %9s %9s %9s %9s %10s | %7s %7s %7s %9s | %9s %11s\n", "bytes", "raw", "OFF",
              "INFO", "DETAIL", "DETAIL/16", "OFF/raw", "INFO/raw", "DET/raw", "DET16/raw",
              "DET/OFF", "DET16/OFF");
  for (const Size& s : kSizes) {
    const auto& off = res["OFF"][s.bytes];
    const double raw = off.first;
    const double o = off.second, i = res["INFO"][s.bytes].second, d = res["DETAIL"][s.bytes].second,
                 d16 = res["DETAIL/16"][s.bytes].second;
    std::printf("%10zu %9.2f %9.2f %9.2f %9.2f %10.2f | %7.3f %7.3f %7.3f %9.3f | %9.3f %11.3f\n",
                s.bytes, raw, o, i, d, d16, o / raw, i / raw, d / raw, d16 / raw, d / o, d16 / o);
  }
  std::remove(out_file.c_str());
  return 0;
}
