// What each always-on layer adds to one op, in nanoseconds (issue 38: <= 100 ns per op). One
// process, no network: for every layer a "without" and a "with" loop of the same ops, each sample
// a batch of kBatch ops timed with the steady clock (ns per op = batch time / kBatch); rounds
// rotate the order of all loops, so the machine's noise falls on every side alike.
//   recorder   FlightRecorder::record + mark_started + mark_completed (the process recorder)
//   watchdog   Watchdog::watch + attach + unwatch (the process watchdog, its thread running)
//   metrics    the process metrics observer's on_op_scheduled + on_op_completed
//   tracing    submit() through TracingProcessGroup (all of the above, as the stack wires it)
//              over a backend that returns a completed Work (an inline op: MPI, Gloo without
//              async_op), against submit() on that backend alone
//   tracing-async  the same with a Work the backend completes after run() returned (a Work per
//              op on both sides; the callback path of an async op)
//   trace-unserved, async-unserved  tracing and tracing-async as the stack traces a group of a
//              process without a debug server: no metrics observer (src/stack/stack.h)
//   clock-read, locked-rmw  not layers: the two steps the bookkeeping's floor is made of, for
//              reading its rows: one reading of the clock an op's bookkeeping reads
//              (Clock::system().mono_ns()), and one uncontended locked read-modify-write (a
//              compare-and-swap, as a slot claim or a reference count takes)
// Usage: collie_layers_bench [ROUNDS=15] [SAMPLES=300]
//        collie_layers_bench --callgrind LAYER with|without OPS  (scripts/bench/layers.sh runs it
//        under valgrind: only collie_bench_collect() is counted)
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/process_group.h"
#include "core/clock.h"
#include "core/stats.h"
#include "debug/flight_recorder.h"
#include "debug/tracing_process_group.h"
#include "debug/watchdog.h"
#include "metrics/metrics_observer.h"
#include "stack/stack.h"

using namespace collie;

namespace {

constexpr int kBatch = 64;

Capabilities all_caps() {
  Capabilities c;
  c.backend = "null";
  for (auto& o : c.ops) o = OpCapability{true, false, kAllDTypeBits, kAllReduceOpBits};
  return c;
}

GroupInfo null_info() {
  GroupInfo i;
  i.backend = "null";
  i.rank = 0;
  i.size = 2;
  i.global_ranks = {0, 1};
  return i;
}

// A backend whose ops cost nothing: the same completed Work every time (inline), or a fresh Work
// the caller completes after submit() returned (async).
class NullBackend : public ProcessGroup {
 public:
  explicit NullBackend(bool async) : ProcessGroup(null_info()), caps_(all_caps()), async_(async) {
    done_->complete();
  }
  const Capabilities& capabilities() const override { return caps_; }

 protected:
  std::shared_ptr<Work> run(const OpCall& call) override {
    if (!async_) return done_;
    return std::make_shared<Work>(call.type, call.seq, call.timeout);
  }

 private:
  Capabilities caps_;
  bool async_;
  std::shared_ptr<Work> done_ = std::make_shared<Work>(OpType::AllReduce, 0, Millis(1));
};

struct Layer {
  std::string name;
  std::function<void()> without, with;
};

float g_buf[2];

OpCall sample_call(uint64_t seq) {
  OpCall c;
  c.type = OpType::AllReduce;
  c.input = TensorView::cpu(g_buf, 2, DType::Float32);
  c.output = c.input;
  c.timeout = Millis(30000);
  c.seq = seq;
  return c;
}

std::vector<Layer> make_layers() {
  static auto trace = [] {
    auto t = std::make_shared<GroupTrace>();
    t->pg_id = "bench";
    t->backend = "null";
    t->global_ranks = {0, 1};
    FlightRecorder::global().add_group(t);
    return t;
  }();
  static auto observer = process_metrics_observer();
  static auto inline_bare = std::make_shared<NullBackend>(false);
  // Traced as the stack traces a group whose process serves metrics (a debug server), and as it
  // traces one that does not (no metrics observer).
  static auto inline_traced = std::make_shared<TracingProcessGroup>(
      std::make_shared<NullBackend>(false), nullptr, nullptr, stack_observers(true));
  static auto inline_unserved = std::make_shared<TracingProcessGroup>(
      std::make_shared<NullBackend>(false), nullptr, nullptr, stack_observers(false));
  static auto async_bare = std::make_shared<NullBackend>(true);
  static auto async_traced = std::make_shared<TracingProcessGroup>(
      std::make_shared<NullBackend>(true), nullptr, nullptr, stack_observers(true));
  static auto async_unserved = std::make_shared<TracingProcessGroup>(
      std::make_shared<NullBackend>(true), nullptr, nullptr, stack_observers(false));
  static auto done = std::make_shared<Work>(OpType::AllReduce, 0, Millis(1));
  static uint64_t seq = 0;
  static volatile uint64_t sink = 0;
  std::vector<Layer> layers;
  layers.push_back({"recorder", [] { sink = sink + sample_call(++seq).seq; },
                    [] {
                      FlightRecorder& fr = FlightRecorder::global();
                      const OpCall c = sample_call(++seq);
                      const uint64_t id = fr.record(*trace, c.seq, c);
                      fr.mark_started(id);
                      fr.mark_completed(id, false);
                    }});
  layers.push_back({"watchdog", [] { sink = sink + sample_call(++seq).seq; },
                    [] {
                      Watchdog& wd = Watchdog::global();
                      const OpCall c = sample_call(++seq);
                      const uint64_t t = wd.watch(trace, c.type, c.seq, c.timeout);
                      wd.attach(t, done);
                      wd.unwatch(t);
                    }});
  layers.push_back({"metrics", [] { sink = sink + sample_call(++seq).seq; },
                    [] {
                      const OpCall c = sample_call(++seq);
                      OpEvent e;
                      e.group = trace.get();
                      e.call = &c;
                      e.op = c.type;
                      e.seq = c.seq;
                      e.bytes = c.input.nbytes();
                      e.created_ns = 1000;
                      observer->on_op_scheduled(e);
                      e.call = nullptr;
                      e.completed_ns = 2000 + static_cast<int64_t>(c.seq % 1000);
                      observer->on_op_completed(e);
                    }});
  layers.push_back({"tracing",
                    [] { inline_bare->all_reduce(TensorView::cpu(g_buf, 2, DType::Float32)); },
                    [] { inline_traced->all_reduce(TensorView::cpu(g_buf, 2, DType::Float32)); }});
  layers.push_back(
      {"tracing-async",
       [] { async_bare->all_reduce(TensorView::cpu(g_buf, 2, DType::Float32))->complete(); },
       [] { async_traced->all_reduce(TensorView::cpu(g_buf, 2, DType::Float32))->complete(); }});
  layers.push_back(
      {"trace-unserved", [] { inline_bare->all_reduce(TensorView::cpu(g_buf, 2, DType::Float32)); },
       [] { inline_unserved->all_reduce(TensorView::cpu(g_buf, 2, DType::Float32)); }});
  layers.push_back(
      {"async-unserved",
       [] { async_bare->all_reduce(TensorView::cpu(g_buf, 2, DType::Float32))->complete(); },
       [] { async_unserved->all_reduce(TensorView::cpu(g_buf, 2, DType::Float32))->complete(); }});
  static Clock& clock = Clock::system();
  static std::atomic<uint64_t> word{0};
  layers.push_back({"clock-read", [] { sink = sink + (++seq); },
                    [] { sink = sink + static_cast<uint64_t>(clock.mono_ns()) + (++seq); }});
  layers.push_back({"locked-rmw", [] { sink = sink + (++seq); },
                    [] {
                      uint64_t w = word.load(std::memory_order_relaxed);
                      word.compare_exchange_strong(w, w + 1);
                      sink = sink + (++seq);
                    }});
  return layers;
}

double batch_ns_per_op(const std::function<void()>& op) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kBatch; ++i) op();
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / kBatch;
}

}  // namespace

// The only code callgrind counts (--toggle-collect=collie_bench_collect): n ops of one loop.
extern "C" __attribute__((noinline)) void collie_bench_collect(const std::function<void()>* op,
                                                               long n) {
  for (long i = 0; i < n; ++i) (*op)();
}

int main(int argc, char** argv) {
  std::vector<Layer> layers = make_layers();
  if (argc == 5 && std::strcmp(argv[1], "--callgrind") == 0) {
    const auto it = std::find_if(layers.begin(), layers.end(),
                                 [&](const Layer& l) { return l.name == argv[2]; });
    if (it == layers.end()) {
      fmt::print(stderr, "unknown layer '{:.40}'\n", argv[2]);
      return 2;
    }
    const bool with = std::strcmp(argv[3], "with") == 0;
    const std::function<void()>& op = with ? it->with : it->without;
    for (int i = 0; i < 1000; ++i) op();  // first-sight registration, warm caches
    collie_bench_collect(&op, std::atol(argv[4]));
    return 0;
  }
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  const int samples = argc > 2 ? std::atoi(argv[2]) : 300;
  if (rounds < 1 || samples < 1) {
    fmt::print(stderr, "usage: collie_layers_bench [ROUNDS>=1] [SAMPLES>=1]\n");
    return 2;
  }
  // Every loop once before timing: first-sight registration (allowed to allocate) and caches.
  for (const Layer& l : layers)
    for (int i = 0; i < 2000; ++i) l.without(), l.with();
  std::vector<const std::function<void()>*> loops;
  for (const Layer& l : layers) loops.push_back(&l.without), loops.push_back(&l.with);
  std::vector<std::vector<double>> ns(loops.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < loops.size(); ++k) {
      const size_t m = (k + static_cast<size_t>(r)) % loops.size();  // rotating order
      for (int s = 0; s < samples; ++s) ns[m].push_back(batch_ns_per_op(*loops[m]));
    }
  }
  fmt::print("# ns per op, {} rounds x {} samples of {} ops per loop, order rotating per round\n",
             rounds, samples, kBatch);
  fmt::print("{:<14} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10}\n", "layer", "w/o p50", "with p50",
             "w/o p90", "with p90", "added p50", "added p90");
  for (size_t i = 0; i < layers.size(); ++i) {
    const auto& a = ns[2 * i];
    const auto& b = ns[2 * i + 1];
    const double a50 = percentile(a, 0.5), b50 = percentile(b, 0.5);
    const double a90 = percentile(a, 0.9), b90 = percentile(b, 0.9);
    fmt::print("{:<14} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>10.1f} {:>10.1f}\n", layers[i].name,
               a50, b50, a90, b90, b50 - a50, b90 - a90);
  }
  return 0;
}
