// Raw Gloo baseline for scripts/bench/overhead.sh: straight gloo calls, nothing from collie.
// Usage: raw_gloo_allreduce RANK SIZE STORE_DIR MIN_BYTES MAX_BYTES FACTOR ITERS WARMUP [MODE]
// Every rank prints "<bytes> <iteration> <us>" per timed all_reduce (float sum, in place), timed
// the way collie perf times one iteration: a barrier, then back-to-back calls, each one timed
// from its start to its return. overhead.sh takes the slowest rank per iteration, as collie
// perf's per-iteration samples do.
// MODE "reuse" (default) calls libgloo the way an expert does: the options (and so the unbound
// buffer over the user's memory) are built once per buffer and reused, only the tag changes.
// MODE "perop" builds them for every call, as collie did before issue 31: the unbound buffer is
// destroyed when the call returns, and its destructor spins in sched_yield until libgloo's I/O
// thread lets go of it (gloo/common/memory.h, ShareableNonOwningPtr); kept for the ablation.
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace {

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

std::unique_ptr<gloo::AllreduceOptions> make_options(
    const std::shared_ptr<gloo::rendezvous::Context>& ctx, float* data, size_t count) {
  auto o = std::make_unique<gloo::AllreduceOptions>(ctx);
  o->setOutput(data, count);
  o->setReduceFunction(static_cast<ReduceFn>(&gloo::sum<float>));
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 9 && argc != 10) {
    std::fprintf(stderr,
                 "usage: %s RANK SIZE STORE_DIR MIN MAX FACTOR ITERS WARMUP [reuse|perop]\n",
                 argv[0]);
    return 2;
  }
  const int rank = std::atoi(argv[1]), size = std::atoi(argv[2]);
  const long min_b = std::atol(argv[4]), max_b = std::atol(argv[5]), factor = std::atol(argv[6]);
  const int iters = std::atoi(argv[7]), warmup = std::atoi(argv[8]);
  const bool perop = argc == 10 && std::strcmp(argv[9], "perop") == 0;
  if (argc == 10 && !perop && std::strcmp(argv[9], "reuse") != 0) {
    std::fprintf(stderr, "%s: MODE is reuse or perop, got '%s'\n", argv[0], argv[9]);
    return 2;
  }
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(argv[3]);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
  ctx->setTimeout(std::chrono::seconds(120));
  ctx->connectFullMesh(store, dev);
  std::vector<double> us(static_cast<size_t>(iters));
  uint32_t tag = 0;
  for (long bytes = min_b; bytes <= max_b; bytes *= factor) {
    const size_t count = static_cast<size_t>(bytes) / sizeof(float);
    std::vector<float> buf(count, 1.0f);
    auto reused = make_options(ctx, buf.data(), count);
    auto one = [&] {
      if (perop) {
        gloo::allreduce(*make_options(ctx, buf.data(), count));
      } else {
        reused->setTag(++tag);
        gloo::allreduce(*reused);
      }
    };
    for (int i = 0; i < warmup; ++i) one();
    gloo::BarrierOptions b(ctx);
    gloo::barrier(b);
    for (int i = 0; i < iters; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      one();
      us[static_cast<size_t>(i)] =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    }
    for (int i = 0; i < iters; ++i)
      std::printf("%ld %d %.3f\n", bytes, i, us[static_cast<size_t>(i)]);
    if (factor <= 1) break;
  }
  return 0;
}
