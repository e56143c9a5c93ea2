// The always-on layers on an op's path (issue 38): no allocation, and no lock shared with the
// threads that read them. The lock checks park a reader (a flight-recorder dump, the watchdog's
// scan) inside its clock read on another thread: with a lock held around that read, the op path
// waits for the reader; without, it runs on.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "debug/flight_recorder.h"
#include "debug/tracing_process_group.h"
#include "debug/watchdog.h"
#ifndef COLLIE_NO_ALLOC_COUNTER
#include "metrics/alloc_counter.h"
#endif
#include "metrics/inspector_metrics.h"
#include "metrics/live_status.h"
#include "metrics/metrics.h"
#include "metrics/metrics_observer.h"

namespace collie {
namespace {

using namespace std::chrono_literals;

// A FakeClock whose reads from one chosen thread block until open() (the reader parked inside
// its clock read); every other thread reads it freely.
class GateClock : public FakeClock {
 public:
  TimePoint now() const override {
    if (std::this_thread::get_id() == parked_) {
      std::unique_lock<std::mutex> lk(mu_);
      entered_ = true;
      cv_.notify_all();
      cv_.wait(lk, [&] { return open_; });
    }
    return FakeClock::now();
  }
  int64_t wall_ns() const override { return now().time_since_epoch().count(); }
  void park(std::thread::id t) { parked_ = t; }
  bool wait_entered() {
    std::unique_lock<std::mutex> lk(mu_);
    return cv_.wait_for(lk, 10s, [&] { return entered_; });
  }
  void open() {
    std::lock_guard<std::mutex> lk(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::atomic<std::thread::id> parked_{};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable bool entered_ = false;
  bool open_ = false;
};

// Runs `reader` on a thread parked in its first clock read, then `ops` on this thread's helper;
// true when `ops` finished while the reader was still parked.
bool ops_run_beside_parked_reader(GateClock& clock, const std::function<void()>& reader,
                                  const std::function<void()>& ops) {
  std::promise<std::thread::id> id;
  std::thread r([&] {
    clock.park(std::this_thread::get_id());
    id.set_value(std::this_thread::get_id());
    reader();
  });
  id.get_future().wait();
  EXPECT_TRUE(clock.wait_entered()) << "the reader never read the clock";
  auto done = std::async(std::launch::async, ops);
  const bool ran = done.wait_for(5s) == std::future_status::ready;
  clock.open();
  done.wait();
  r.join();
  return ran;
}

OpCall call_of(uint64_t seq, float* buf) {
  OpCall c;
  c.type = OpType::AllReduce;
  c.input = TensorView::cpu(buf, 2, DType::Float32);
  c.output = c.input;
  c.timeout = Millis(60000);
  c.seq = seq;
  return c;
}

std::shared_ptr<GroupTrace> group_trace() {
  auto g = std::make_shared<GroupTrace>();
  g->pg_id = "0";
  g->backend = "fake";
  g->global_ranks = {0, 1};
  return g;
}

TEST(FastPath, ADumpInProgressNeverBlocksTheRecorder) {
  GateClock clock;
  FlightRecorder fr(64, &clock);
  auto g = group_trace();
  fr.add_group(g);
  float buf[2] = {};
  const uint64_t first = fr.record(*g, 1, call_of(1, buf), 5);
  size_t seen = 0;
  const bool ran = ops_run_beside_parked_reader(
      clock, [&] { seen = fr.snapshot().size(); },
      [&] {
        for (uint64_t seq = 2; seq < 200; ++seq) {
          const uint64_t id = fr.record(*g, seq, call_of(seq, buf), 10);
          fr.mark_completed(id, false, 20);
        }
      });
  EXPECT_TRUE(ran) << "record/mark_completed waited for a dump that was reading its clock";
  EXPECT_GE(seen, 1u);
  fr.mark_completed(first, false, 30);
  const auto snap = fr.snapshot();
  ASSERT_EQ(snap.size(), 64u);
  EXPECT_EQ(snap.back().record_id, 199u);
  EXPECT_EQ(snap.back().state, FrState::Completed);
  EXPECT_EQ(fr.total_recorded(), 199u);
}

TEST(FastPath, AWatchdogScanNeverBlocksWatchAndUnwatch) {
  GateClock clock;
  Watchdog wd(clock, /*start_thread=*/false);
  wd.set_timeout_handler([](const Watchdog::Expired&) {});
  auto g = group_trace();
  const auto now = clock.now();
  int expired = -1;
  const bool ran = ops_run_beside_parked_reader(
      clock, [&] { expired = wd.check_now(); },
      [&] {
        auto work = std::make_shared<Work>(OpType::AllReduce, 1, Millis(1000));
        for (uint64_t seq = 1; seq < 200; ++seq) {
          const uint64_t t = wd.watch(g, OpType::AllReduce, seq, Millis(1000), now);
          wd.attach(t, work);
          wd.unwatch(t);
        }
      });
  EXPECT_TRUE(ran) << "watch/attach/unwatch waited for a scan that was reading its clock";
  EXPECT_EQ(expired, 0);
  EXPECT_EQ(wd.pending(), 0u);
}

// More ops in flight than the watchdog has slots: the rest are still watched and expire.
TEST(FastPath, WatchdogBeyondItsSlotsStillExpiresEveryOp) {
  FakeClock clock;
  Watchdog wd(clock, /*start_thread=*/false);
  std::atomic<int> fired{0};
  wd.set_timeout_handler([&](const Watchdog::Expired&) { ++fired; });
  auto g = group_trace();
  std::vector<std::shared_ptr<Work>> works;
  std::vector<uint64_t> tokens;
  for (uint64_t seq = 1; seq <= 300; ++seq) {
    works.push_back(std::make_shared<Work>(OpType::AllReduce, seq, Millis(100)));
    tokens.push_back(wd.watch(g, OpType::AllReduce, seq, Millis(100)));
    wd.attach(tokens.back(), works.back());
  }
  for (size_t i = 0; i < tokens.size(); i += 2) wd.unwatch(tokens[i]);  // half complete
  EXPECT_EQ(wd.pending(), 150u);
  EXPECT_EQ(wd.check_now(), 0);
  clock.advance(Millis(101));
  EXPECT_EQ(wd.check_now(), 150);
  EXPECT_EQ(fired.load(), 150);
  for (size_t i = 0; i < works.size(); ++i)
    EXPECT_EQ(works[i]->is_completed(), i % 2 == 1) << "op " << i + 1;
  EXPECT_EQ(wd.pending(), 0u);
}

// A backend whose ops cost nothing. Inline: the same completed Work every time. Async: a new
// Work per op, completed only when the caller completes it.
class FakeBackend : public ProcessGroup {
 public:
  explicit FakeBackend(bool async) : ProcessGroup(info()), async_(async) {
    caps_.backend = "fake";
    for (auto& o : caps_.ops) o = OpCapability{true, false, kAllDTypeBits, kAllReduceOpBits};
    done_->complete();
  }
  const Capabilities& capabilities() const override { return caps_; }

 protected:
  std::shared_ptr<Work> run(const OpCall& call) override {
    return async_ ? std::make_shared<Work>(call.type, call.seq, call.timeout) : done_;
  }

 private:
  static GroupInfo info() {
    GroupInfo i;
    i.backend = "fake";
    i.size = 2;
    i.global_ranks = {0, 1};
    return i;
  }
  const bool async_;
  Capabilities caps_;
  std::shared_ptr<Work> done_ = std::make_shared<Work>(OpType::AllReduce, 0, Millis(1));
};

// A group wrapped as the stack wraps it: the flight recorder, a watchdog with its thread
// running, metrics, live status and the Inspector series.
struct Traced {
  explicit Traced(std::shared_ptr<ProcessGroup> backend, size_t ring = 64) : fr(ring) {
    auto obs = std::make_shared<MetricsObserver>(m, live, &inspector);
    pg = std::make_shared<TracingProcessGroup>(std::move(backend), &fr, &wd,
                                               std::vector<std::shared_ptr<OpObserver>>{obs});
  }
  FlightRecorder fr;
  Watchdog wd{Clock::system()};
  Metrics m;
  LiveStatus live;
  InspectorMetrics inspector{InspectorMetrics::Options{}};
  std::shared_ptr<TracingProcessGroup> pg;
};

// A FakeClock that counts the reads made from the thread that created it.
class CountingClock : public FakeClock {
 public:
  TimePoint now() const override {
    if (std::this_thread::get_id() == owner_) reads_.fetch_add(1);
    return FakeClock::now();
  }
  int reads() const { return reads_.load(); }

 private:
  const std::thread::id owner_ = std::this_thread::get_id();
  mutable std::atomic<int> reads_{0};
};

// A clock read is the one thing the fast path asks of the system (~10 ns from the time-stamp
// counter, ~22 through clock_gettime on this project's VMs): an inline op reads it twice, when it
// is created (the record, the watchdog's deadline, live status) and when it completed (the record,
// the metrics), and an async op once more when its Work is handed over.
TEST(FastPath, AnOpReadsTheClockOnceWhenCreatedAndOnceWhenDone) {
  CountingClock clock;
  FlightRecorder fr(64, &clock);
  Watchdog wd(clock, /*start_thread=*/false);
  Metrics m;
  LiveStatus live;
  InspectorMetrics inspector{InspectorMetrics::Options{}};
  auto obs = std::make_shared<MetricsObserver>(m, live, &inspector);
  float buf[2] = {};
  const auto t = TensorView::cpu(buf, 2, DType::Float32);
  for (const bool async : {false, true}) {
    TracingProcessGroup pg(std::make_shared<FakeBackend>(async), &fr, &wd,
                           std::vector<std::shared_ptr<OpObserver>>{obs});
    pg.all_reduce(t)->complete();  // first sight of the group
    const int before = clock.reads();
    for (int i = 0; i < 100; ++i) pg.all_reduce(t)->complete();
    EXPECT_EQ(clock.reads() - before, async ? 300 : 200) << (async ? "async" : "inline");
  }
  EXPECT_EQ(wd.pending(), 0u);
}

// An inline op through the whole tracing layer (recorder, watchdog with its thread running,
// metrics, live status, Inspector series) allocates nothing once the group has seen its first op.
TEST(FastPath, TracedInlineOpsDoNotAllocate) {
#ifdef COLLIE_NO_ALLOC_COUNTER
  GTEST_SKIP() << "ThreadSanitizer's runtime defines operator new, so a counting one cannot be "
                  "linked; the plain and ASan builds count the allocations";
#else
  Traced traced(std::make_shared<FakeBackend>(false));
  FlightRecorder& fr = traced.fr;
  auto& pg = traced.pg;
  float buf[2] = {};
  const auto t = TensorView::cpu(buf, 2, DType::Float32);
  for (int i = 0; i < 3; ++i) pg->all_reduce(t);  // first sight of the group may allocate
  {
    testing::AllocationCounter allocs;
    for (int i = 0; i < 2000; ++i) pg->all_reduce(t);
    EXPECT_EQ(allocs.count(), 0);
  }
  EXPECT_EQ(fr.total_recorded(), 2003u);
  EXPECT_EQ(pg->trace()->last_completed_collective.load(), 2003u);
  EXPECT_EQ(traced.wd.pending(), 0u);
  EXPECT_NE(traced.m.serialize(&traced.live)
                .find("collie_last_completed_seq{backend=\"fake\",pg=\"0\",rank=\"0\"} "
                      "2003"),
            std::string::npos);
#endif
}

// An async op (its Work completed after submit returned) costs the tracing layer no allocation:
// the bare backend and the traced one allocate the same per op (the backend's own Work).
TEST(FastPath, TracedAsyncOpsAllocateNothingBeyondTheBackend) {
#ifdef COLLIE_NO_ALLOC_COUNTER
  GTEST_SKIP() << "ThreadSanitizer's runtime defines operator new, so a counting one cannot be "
                  "linked; the plain and ASan builds count the allocations";
#else
  Traced traced(std::make_shared<FakeBackend>(true));
  FlightRecorder& fr = traced.fr;
  auto& pg = traced.pg;
  auto bare = std::make_shared<FakeBackend>(true);
  float buf[2] = {};
  const auto t = TensorView::cpu(buf, 2, DType::Float32);
  for (int i = 0; i < 3; ++i) {  // first sight of the group may allocate
    pg->all_reduce(t)->complete();
    bare->all_reduce(t)->complete();
  }
  constexpr int kOps = 2000;
  int bare_allocs = 0, traced_allocs = 0;
  {
    testing::AllocationCounter allocs;
    for (int i = 0; i < kOps; ++i) bare->all_reduce(t)->complete();
    bare_allocs = allocs.count();
  }
  {
    testing::AllocationCounter allocs;
    for (int i = 0; i < kOps; ++i) pg->all_reduce(t)->complete();
    traced_allocs = allocs.count();
  }
  EXPECT_GE(bare_allocs, kOps);  // the backend's Work
  EXPECT_EQ(traced_allocs, bare_allocs)
      << "the tracing layer allocated " << (traced_allocs - bare_allocs) / double(kOps)
      << " times per async op";
  EXPECT_EQ(fr.total_recorded(), kOps + 3u);
  EXPECT_EQ(pg->trace()->last_completed_collective.load(), kOps + 3u);
  EXPECT_EQ(traced.wd.pending(), 0u);
#endif
}

// The counters an op raises are owned by the first thread that raises them (core/owned_counter.h):
// ops completed on other threads, concurrently with the owner's, still count exactly once.
TEST(FastPath, OpsCompletedOnSeveralThreadsAreCountedExactlyOnce) {
  Traced traced(std::make_shared<FakeBackend>(true), 4000);
  auto& pg = traced.pg;
  float buf[2] = {};
  const auto t = TensorView::cpu(buf, 2, DType::Float32);
  pg->all_reduce(t)->complete();  // this thread owns the group's sets from here on
  constexpr int kOps = 3000;
  std::vector<std::shared_ptr<Work>> works;
  for (int i = 0; i < kOps; ++i) works.push_back(pg->all_reduce(t));
  std::atomic<int> ready{0};
  const auto complete_every_third = [&](int k) {
    ready.fetch_add(1);
    while (ready.load() < 3) {
    }  // all three at once: the completions interleave
    for (int i = k; i < kOps; i += 3) works[i]->complete();
  };
  std::vector<std::thread> completers;
  for (int k = 1; k < 3; ++k) completers.emplace_back(complete_every_third, k);
  complete_every_third(0);
  for (auto& th : completers) th.join();
  EXPECT_EQ(pg->trace()->last_completed_collective.load(), kOps + 1u);
  EXPECT_EQ(traced.wd.pending(), 0u);
  const auto groups = traced.live.snapshot();
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].ops_completed, kOps + 1u);
  EXPECT_EQ(groups[0].inflight, 0);
  const std::string text = traced.m.serialize(&traced.live);
  EXPECT_NE(text.find("collie_collective_ops_total{"), std::string::npos) << text;
  EXPECT_NE(text.find("} " + std::to_string(kOps + 1) + "\n"), std::string::npos)
      << "no series counted " << kOps + 1 << " ops:\n"
      << text;
  EXPECT_NE(text.find("collie_collective_bytes_total{"), std::string::npos);
  EXPECT_NE(text.find("} " + std::to_string(8 * (kOps + 1)) + "\n"), std::string::npos)
      << "8 bytes per op:\n"
      << text;
}

// More async ops in flight than the group keeps completion slots for, completed in reverse
// order; then one completed after its group is gone. Each is recorded completed exactly once.
TEST(FastPath, AsyncOpsBeyondThePendingSlotsAndPastTheirGroupComplete) {
  Traced traced(std::make_shared<FakeBackend>(true), 1000);
  FlightRecorder& fr = traced.fr;
  auto pg = traced.pg;
  traced.pg.reset();  // this test drops the group while a Work is in flight
  float buf[2] = {};
  const auto t = TensorView::cpu(buf, 2, DType::Float32);
  std::vector<std::shared_ptr<Work>> works;
  for (int i = 0; i < 300; ++i) works.push_back(pg->all_reduce(t));
  EXPECT_EQ(traced.wd.pending(), 300u);
  for (auto it = works.rbegin(); it != works.rend(); ++it) (*it)->complete();
  works.clear();
  EXPECT_EQ(traced.wd.pending(), 0u);
  EXPECT_EQ(pg->trace()->last_completed_collective.load(), 300u);
  // The slots are free again: another round reuses them.
  for (int i = 0; i < 100; ++i) works.push_back(pg->all_reduce(t));
  for (auto& w : works) w->complete();
  works.clear();
  auto late = pg->all_reduce(t);
  const std::shared_ptr<GroupTrace> trace = pg->trace();
  pg.reset();  // the Work outlives its group
  late->complete();
  EXPECT_EQ(trace->last_completed_collective.load(), 401u);
  EXPECT_EQ(traced.wd.pending(), 0u);
  int completed = 0;
  for (const FrEntry& e : fr.snapshot()) completed += e.state == FrState::Completed;
  EXPECT_EQ(completed, 401);
  EXPECT_NE(traced.m.serialize(&traced.live)
                .find("collie_last_completed_seq{backend=\"fake\",pg=\"0\",rank=\"0\"} "
                      "401"),
            std::string::npos);
}

}  // namespace
}  // namespace collie
