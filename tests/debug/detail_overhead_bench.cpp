// Per-op time of all_reduce on Gloo (NP processes over loopback, default 2) for every debug mode,
// all measured in the same two processes over the same backend group:
//   raw        the backend itself (no wrapper)
//   OFF        the always-on tracing wrapper (flight recorder, watchdog, metrics)
//   INFO       the same stack with the debug level set to INFO at run time
//   DETAIL     desync checks under tracing, the ranks agreeing over a TCP tree (the default)
//   DETAIL/16  the same on every 16th op (COLLIE_DESYNC_SAMPLE=16)
//   DET/store  desync checks through the store (the fallback when the tree cannot connect)
//   DET/spin   DETAIL with the tree spinning up to 50 us before it sleeps (AgreementTree::set_spin)
// Modes run in short blocks in an order that rotates every round, so this shared machine's noise
// falls on all of them alike. Every op is timed on its own (rank 0's call to completion); each
// mode's p50 and p90 are over all its samples, and the ratios compare those percentiles.
// Run through scripts/bench/detail_overhead.sh.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "comm/registry.h"
#include "comm/wrapper.h"
#include "core/env.h"
#include "core/log.h"
#include "core/stats.h"
#include "debug/desync_checking_process_group.h"
#include "debug/fingerprint_agreement.h"
#include "debug/tracing_process_group.h"
#include "stack/stack.h"
#include "store/prefix_store.h"
#include "support/fake_backend.h"
#include "support/multiprocess.h"

namespace {

using namespace collie;

struct Size {
  size_t bytes;
  int iters;  // per block
};
const std::vector<Size> kSizes = {{8, 1000}, {64 << 10, 100}, {1 << 20, 20}, {16 << 20, 3}};
const std::vector<std::string> kModes = {"raw",       "OFF",       "INFO",    "DETAIL",
                                         "DETAIL/16", "DET/store", "DET/spin"};

// Runs `iters` all_reduces, appending each one's time in us to `out`.
void sample_ops(ProcessGroup& pg, std::vector<float>& buf, size_t count, int iters,
                std::vector<double>& out) {
  TensorView t = TensorView::cpu(buf.data(), count, DType::Float32);
  for (int i = 0; i < iters; ++i) {
    const auto start = std::chrono::steady_clock::now();
    pg.all_reduce(t)->wait();
    out.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
  }
}

double per_op_us(ProcessGroup& pg, std::vector<float>& buf, size_t count, int iters) {
  TensorView t = TensorView::cpu(buf.data(), count, DType::Float32);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) pg.all_reduce(t)->wait();
  const auto us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start);
  return us.count() / iters;
}

// One line per size on rank 0: bytes, then per mode its p50, then per mode its p90, then the
// DETAIL modes' p50 and p90 ratios to OFF.
std::string measure(testing::RankContext& ctx, int rounds) {
  // ctx.pg is tracing over the backend (COLLIE_DEBUG=OFF); the other stacks share that backend.
  ProcessGroup& backend = backend_of(*ctx.pg);
  std::shared_ptr<ProcessGroup> raw(ctx.pg, &backend);  // aliases ctx.pg's ownership
  auto store = ctx.pg->info().store;
  // Built as the "desync" wrapper builds DETAIL groups; each checker gets its own namespace.
  auto checked = [&](uint64_t sample, const std::string& tag, bool tree, bool spin = false) {
    auto own = std::make_shared<PrefixStore>(tag, store);
    auto t = tree ? make_agreement_tree(*raw, tag + "_tree", Env::process()) : nullptr;
    if (t && spin) t->set_spin(std::chrono::microseconds(50));
    return std::make_shared<TracingProcessGroup>(
        std::make_shared<DesyncCheckingProcessGroup>(raw, sample, own, std::move(t)), nullptr,
        nullptr, stack_observers(BackendArgs{}));
  };
  auto detail = checked(1, "bench_detail", true);
  auto detail16 = checked(16, "bench_detail16", true);
  auto detail_store = checked(1, "bench_detail_store", false);
  auto detail_spin = checked(1, "bench_detail_spin", true, true);
  ProcessGroup* stacks[] = {raw.get(),      ctx.pg.get(),       ctx.pg.get(),     detail.get(),
                            detail16.get(), detail_store.get(), detail_spin.get()};
  const size_t nm = kModes.size();

  std::vector<float> buf((16 << 20) / sizeof(float), 1.0f);
  std::string out;
  for (const Size& s : kSizes) {
    const size_t count = std::max<size_t>(1, s.bytes / sizeof(float));
    std::vector<std::vector<double>> samples(nm);
    std::vector<double> warm;
    for (int round = -1; round < rounds; ++round) {  // round -1 warms every stack up
      for (size_t k = 0; k < nm; ++k) {
        const size_t m = (k + static_cast<size_t>(round + 1)) % nm;
        set_debug_level(kModes[m] == "INFO" ? DebugLevel::Info : DebugLevel::Off);
        sample_ops(*stacks[m], buf, count, s.iters, round >= 0 ? samples[m] : warm);
      }
    }
    std::vector<double> p50(nm), p90(nm);
    for (size_t m = 0; m < nm; ++m) {
      p50[m] = percentile(samples[m], 0.5);
      p90[m] = percentile(samples[m], 0.9);
    }
    out += fmt::format("{}", s.bytes);
    for (size_t m = 0; m < nm; ++m) out += fmt::format(" {}", p50[m]);
    for (size_t m = 0; m < nm; ++m) out += fmt::format(" {}", p90[m]);
    for (size_t m = 3; m < nm; ++m) out += fmt::format(" {} {}", p50[m] / p50[1], p90[m] / p90[1]);
    out += "\n";
  }
  return out;
}

// Tracing cost alone, without network noise: an 8-element all_reduce on a backend that completes
// at once (median of interleaved repetitions of 200000 ops), raw vs wrapped by the always-on
// TracingProcessGroup (flight recorder + watchdog).
double tracing_only(int reps) {
  auto backend = std::make_shared<testing::FakeBackend>(
      testing::fake_info(0, 2, std::make_shared<HashStore>(), Millis(60000)));
  auto traced = std::make_shared<TracingProcessGroup>(backend, nullptr, nullptr,
                                                      stack_observers(BackendArgs{}));
  std::vector<float> buf(8);
  const int iters = 200000;
  std::vector<double> raws, wrappeds;  // interleaved repetitions; their medians are compared
  for (int r = 0; r < reps; ++r) {
    raws.push_back(per_op_us(*backend, buf, buf.size(), iters));
    wrappeds.push_back(per_op_us(*traced, buf, buf.size(), iters));
  }
  const double raw = median(raws), wrapped = median(wrappeds);
  std::printf("# tracing layer alone (in-process backend that completes at once), per op:\n");
  std::printf("#   raw %.3f us, traced %.3f us, overhead %.3f us\n", raw, wrapped, wrapped - raw);
  return wrapped - raw;
}

}  // namespace

int main(int argc, char** argv) {
  // BENCH_TRACING_ONLY=REPS: only the tracing layer's cost, REPS repetitions (for a profiler:
  // `perf record` sees the always-on stack's per-op path without any network).
  if (const char* reps = std::getenv("BENCH_TRACING_ONLY")) {
    tracing_only(std::max(1, std::atoi(reps)));
    return 0;
  }
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  const int np = argc > 2 ? std::atoi(argv[2]) : 2;
  if (rounds < 1 || np < 2) {
    std::fprintf(stderr, "detail_overhead_bench: ROUNDS must be >= 1 and NP >= 2\n");
    return 2;
  }
  const std::string out_file = fmt::format("/tmp/collie_detail_bench_{}.txt", ::getpid());
  testing::RunOptions o;
  o.mode = testing::Mode::Processes;
  o.deadline = Millis(600000);
  o.group_timeout = Millis(60000);
  o.env = {{"COLLIE_DEBUG", "OFF"}};
  auto r = testing::run_ranks(
      np,
      [&](testing::RankContext& ctx) {
        const std::string text = measure(ctx, rounds);
        if (ctx.rank == 0) std::ofstream(out_file) << text;
      },
      o);
  if (!r.ok()) {
    std::fprintf(stderr, "detail_overhead_bench: %s\n", r.summary().c_str());
    return 1;
  }
  std::printf(
      "# all_reduce float32 on gloo, %d processes over loopback, all modes in the same processes;\n"
      "# per-op samples on rank 0 (each op timed from call to completion), %d interleaved rounds\n"
      "# of blocks per mode; p50/p90 in us over all of a mode's samples\n",
      np, rounds);
  const size_t nm = kModes.size();
  std::printf("%10s", "bytes");
  for (const auto& m : kModes) std::printf(" %10s", ("p50 " + m).c_str());
  std::printf(" |");
  for (const auto& m : kModes) std::printf(" %10s", ("p90 " + m).c_str());
  std::printf(" |");
  for (size_t m = 3; m < nm; ++m) {
    std::printf(" %14s %14s", (kModes[m] + "/OFF p50").c_str(), (kModes[m] + "/OFF p90").c_str());
  }
  std::printf("\n");
  std::ifstream f(out_file);
  size_t bytes;
  std::vector<double> v(2 * nm + 2 * (nm - 3));
  std::vector<std::pair<size_t, double>> raw_us;
  while (f >> bytes) {
    for (double& x : v) f >> x;
    std::printf("%10zu", bytes);
    for (size_t i = 0; i < v.size(); ++i) {
      if (i == nm || i == 2 * nm) std::printf(" |");
      if (i < 2 * nm) {
        std::printf(" %10.2f", v[i]);
      } else {
        std::printf(" %14.3f", v[i]);
      }
    }
    std::printf("\n");
    raw_us.emplace_back(bytes, v[0]);
  }
  std::remove(out_file.c_str());
  // OFF/raw above carries this machine's noise; the tracing layer's own cost, measured without a
  // network (after the ranks ended: the harness forks before any thread), bounds it directly.
  const double trace_us = tracing_only(5);
  for (const auto& [b, raw] : raw_us) {
    std::printf("#   tracing cost at %zu B: %.3f us of %.2f us raw = %.3f %%\n", b, trace_us, raw,
                100 * trace_us / raw);
  }
  return 0;
}
