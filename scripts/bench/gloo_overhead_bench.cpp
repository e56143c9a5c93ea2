// collie's Gloo path against libgloo itself, in the same NP processes over the same loopback:
//   libgloo   gloo::allreduce on a context of its own (gloo::sum<float>), as an expert user of
//             libgloo writes it: options built once per buffer, a new tag per op; nothing
//             from collie on the path
//   backend   collie's ProcessGroupGloo (no wrapper)
//   OFF       what collie perf runs: the always-on tracing stack over the backend
// all_reduce float32 sum in place, every op timed on its own (rank 0's clock). Per round each
// mode runs one block of ITERS ops, in an order that rotates every round, so this machine's
// noise falls on all modes alike. Printed per size: p50 and p90 of every mode's samples and the
// ratios to libgloo. Run through scripts/bench/gloo_overhead.sh.
// Usage: gloo_overhead_bench [ROUNDS=6] [NP=2] [ITERS=50] [MIN=8] [MAX=16777216] [FACTOR=8]
#include <dirent.h>
#include <fmt/format.h>
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <vector>

#include "backends/gloo/gloo_store.h"
#include "comm/wrapper.h"
#include "core/stats.h"
#include "store/prefix_store.h"
#include "support/multiprocess.h"

namespace {

using namespace collie;
using Clock = std::chrono::steady_clock;

struct Args {
  int rounds = 6, np = 2, iters = 50;
  long min = 8, max = 16 << 20, factor = 8;
};

std::vector<std::string> kModes = {"libgloo", "backend", "OFF"};

// BENCH_PIN=1: every thread of rank r (the backend's, libgloo's, collie's) on CPU r mod nproc,
// so each run compares the modes under one thread placement instead of whichever the scheduler
// picked (on a 2-vCPU VM the placement alone moves an 8 B op between ~75 and ~155 us).
void pin_all_threads(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    const int tid = std::atoi(e->d_name);
    if (tid > 0) ::sched_setaffinity(tid, sizeof set, &set);
  }
  ::closedir(d);
}

std::string measure(testing::RankContext& ctx, const Args& a) {
  // libgloo's own context, connected through the job's store under a prefix of its own.
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  auto gctx = std::make_shared<gloo::rendezvous::Context>(ctx.rank, a.np);
  gctx->setTimeout(std::chrono::seconds(120));
  GlooStoreAdapter adapter(std::make_shared<PrefixStore>("libgloo_bench", ctx.pg->info().store));
  gctx->connectFullMesh(adapter, dev);
  ProcessGroup& backend = backend_of(*ctx.pg);
  if (std::getenv("BENCH_PIN") != nullptr) {
    const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    pin_all_threads(static_cast<int>(ctx.rank % std::max(1L, cpus)));
  }

  std::vector<float> buf(static_cast<size_t>(a.max) / sizeof(float) + 1, 1.0f);
  std::string out;
  for (long bytes = a.min; bytes <= a.max; bytes *= a.factor) {
    const size_t count = std::max<size_t>(1, static_cast<size_t>(bytes) / sizeof(float));
    using ReduceFn = void (*)(void*, const void*, const void*, size_t);
    // libgloo the way an expert calls it: options (and their unbound buffer) built once per
    // buffer, the tag set per op.
    gloo::AllreduceOptions reused(gctx);
    reused.setOutput(buf.data(), count);
    reused.setReduceFunction(static_cast<ReduceFn>(&gloo::sum<float>));
    uint32_t tag = 0;
    auto op = [&](size_t mode) {
      if (mode == 0) {
        reused.setTag(++tag);
        gloo::allreduce(reused);
      } else if (mode >= 3) {
        // Ablation: options built per op (collie before issue 31), alone or with one more
        // difference.
        gloo::AllreduceOptions o(gctx);
        o.setOutput(buf.data(), count);
        o.setReduceFunction(static_cast<ReduceFn>(&gloo::sum<float>));
        if (mode == 4) o.setTag(++tag);
        if (mode == 5)
          o.setReduceFunction(std::function<void(void*, const void*, const void*, size_t)>(
              [](void* out, const void* x, const void* y, size_t n) {
                if (out != x) std::memcpy(out, x, n * sizeof(float));
                gloo::sum<float>(out, out, y, n);
              }));
        gloo::allreduce(o);
      } else {
        ProcessGroup& pg = mode == 1 ? backend : *ctx.pg;
        pg.all_reduce(TensorView::cpu(buf.data(), count, DType::Float32))->wait();
      }
    };
    const int iters = bytes >= (4 << 20) ? std::max(5, a.iters / 5) : a.iters;
    std::vector<std::vector<double>> us(kModes.size());
    for (int round = -1; round < a.rounds; ++round) {  // round -1 warms every mode up
      for (size_t k = 0; k < kModes.size(); ++k) {
        const size_t m = (k + static_cast<size_t>(round + 1)) % kModes.size();
        for (int i = 0; i < iters; ++i) {
          const auto t0 = Clock::now();
          op(m);
          const double t = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
          if (round >= 0) us[m].push_back(t);
        }
      }
    }
    for (size_t m = 0; m < kModes.size(); ++m) {
      const auto& v = us[m];
      const auto stalls = std::count_if(v.begin(), v.end(), [](double t) { return t > 3000; });
      out += fmt::format("{} {} {} {} {} {}\n", bytes, kModes[m], v.size(), median(v),
                         percentile(v, 0.9), stalls);
    }
    out += "\n";
    if (a.factor <= 1) break;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  // Ablation: libgloo with its options built for every op (what collie did before issue 31),
  // alone, with a tag per op, and with the reduction through std::function.
  if (std::getenv("BENCH_ABLATION"))
    kModes.insert(kModes.end(), {"gloo-perop", "perop+tag", "perop+func"});
  if (argc > 1) a.rounds = std::atoi(argv[1]);
  if (argc > 2) a.np = std::atoi(argv[2]);
  if (argc > 3) a.iters = std::atoi(argv[3]);
  if (argc > 4) a.min = std::atol(argv[4]);
  if (argc > 5) a.max = std::atol(argv[5]);
  if (argc > 6) a.factor = std::atol(argv[6]);
  if (a.rounds < 1 || a.np < 2 || a.iters < 1 || a.min < 4 || a.max < a.min || a.factor < 1) {
    std::fprintf(stderr,
                 "gloo_overhead_bench: ROUNDS >= 1, NP >= 2, ITERS >= 1, 4 <= MIN <= MAX, "
                 "FACTOR >= 1\n");
    return 2;
  }
  const std::string out_file = fmt::format("/tmp/collie_gloo_bench_{}.txt", ::getpid());
  testing::RunOptions o;
  o.mode = testing::Mode::Processes;
  o.deadline = Millis(1800000);
  o.group_timeout = Millis(120000);
  o.env = {{"COLLIE_DEBUG", "OFF"}};
  auto r = testing::run_ranks(
      a.np,
      [&](testing::RankContext& ctx) {
        const std::string text = measure(ctx, a);
        if (ctx.rank == 0) std::ofstream(out_file) << text;
      },
      o);
  if (!r.ok()) {
    std::fprintf(stderr, "gloo_overhead_bench: %s\n", r.summary().c_str());
    return 1;
  }
  std::printf(
      "# all_reduce float32 sum in place, %d processes over loopback; libgloo = gloo::allreduce "
      "on its own context,\n# backend = collie's ProcessGroupGloo, OFF = collie perf's stack; "
      "per-op samples on rank 0, %d interleaved rounds;\n# stalls = samples over 3 ms (a "
      "scheduler tick is 4 ms here); ratios against libgloo of the same size\n",
      a.np, a.rounds);
  std::printf("%10s %-13s %6s %10s %10s %8s %8s %7s\n", "bytes", "mode", "n", "p50 us", "p90 us",
              "p50/raw", "p90/raw", "stalls");
  std::ifstream f(out_file);
  long bytes;
  std::string mode;
  size_t n, stalls;
  double p50, p90, raw50 = 0, raw90 = 0;
  while (f >> bytes >> mode >> n >> p50 >> p90 >> stalls) {
    if (mode == "libgloo") raw50 = p50, raw90 = p90;
    std::printf("%10ld %-13s %6zu %10.1f %10.1f %8.3f %8.3f %7zu\n", bytes, mode.c_str(), n, p50,
                p90, p50 / raw50, p90 / raw90, stalls);
  }
  std::remove(out_file.c_str());
  return 0;
}
