// collie's background threads are event-driven: an idle watchdog or dump thread does not wake on
// a tick. Measured through the kernel's count of the thread's voluntary context switches (each
// sleep that ends is one) over a second of idleness; with the old 100 ms / 50 ms ticks these
// were 10 and 20 a second. Threads are found by the names they give themselves.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "comm/work.h"
#include "core/clock.h"
#include "core/error.h"
#include "debug/dump_service.h"
#include "debug/flight_recorder.h"
#include "debug/watchdog.h"
#include "store/hash_store.h"
#include "support/thread_probe.h"
#include "support/time_scale.h"

namespace collie {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using testing::new_thread;
using testing::scaled;
using testing::threads_named;
using testing::wakeups;
using testing::wakeups_over;

TEST(IdleThreads, WatchdogSleepsUntilTheEarliestDeadline) {
  const auto before = threads_named("collie-watchdog");
  Watchdog wd(Clock::system());
  const int tid = new_thread("collie-watchdog", before);
  ASSERT_GE(tid, 0) << "no new thread named collie-watchdog";
  ASSERT_TRUE(testing::settled(tid)) << "the thread never went to sleep";
  EXPECT_LE(wakeups_over(tid, 1000ms), 1) << "idle, nothing watched";
  // Ops in flight with a far deadline, watched and finished back to back as a perf loop does:
  // no wakeup per op and none on a tick.
  auto held = wd.watch(nullptr, OpType::AllReduce, 1, Millis(60000));
  ASSERT_TRUE(testing::settled(tid)) << "the thread never went to sleep";
  const long start = wakeups(tid);
  for (uint64_t seq = 2; seq < 2000; ++seq)
    wd.unwatch(wd.watch(nullptr, OpType::AllReduce, seq, Millis(60000)));
  std::this_thread::sleep_for(1000ms);
  EXPECT_LE(wakeups(tid) - start, 1) << "an op in flight for a second, 2000 ops watched";
  wd.unwatch(held);
  // A near deadline still fires on time.
  std::atomic<int> fired{0};
  wd.set_timeout_handler([&](const Watchdog::Expired&) { ++fired; });
  auto work = std::make_shared<Work>(OpType::Barrier, 7, Millis(5000));
  wd.attach(wd.watch(nullptr, OpType::Barrier, 7, Millis(200)), work);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(work->wait(Millis(3000)), TimeoutError);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(s, 0.19);
  EXPECT_LT(s, scaled(1.0));
  EXPECT_EQ(fired.load(), 1);
}

// Short ops with gaps between them and nothing else in flight (a training step's small
// collectives between compute): each op is done before the thread looks at it. The thread keeps
// the deadline it was woken for as its next wakeup, so the next ops (later deadlines) do not wake
// it again: one wakeup, not one per op (a futex wake and a context switch each).
TEST(IdleThreads, WatchdogIsNotWokenPerOpWhenOpsEndBeforeItLooks) {
  // One CPU for this thread and the watchdog's (it inherits the mask), where the woken thread
  // runs only once this one sleeps, after the op ended, as on a busy rank.
  cpu_set_t all, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &all)) {
      CPU_SET(c, &one);
      break;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  struct Restore {
    cpu_set_t mask;
    ~Restore() { sched_setaffinity(0, sizeof(mask), &mask); }
  } restore{all};
  const auto before = threads_named("collie-watchdog");
  Watchdog wd(Clock::system());
  const int tid = new_thread("collie-watchdog", before);
  ASSERT_GE(tid, 0) << "no new thread named collie-watchdog";
  // And it runs only when the CPU is otherwise idle (SCHED_IDLE never preempts this thread).
  sched_param idle{};
  ASSERT_EQ(sched_setscheduler(tid, SCHED_IDLE, &idle), 0);
  ASSERT_TRUE(testing::settled(tid)) << "the thread never went to sleep";
  const long start = wakeups(tid);
  for (uint64_t seq = 1; seq <= 200; ++seq) {
    wd.unwatch(wd.watch(nullptr, OpType::AllReduce, seq, Millis(60000)));
    std::this_thread::sleep_for(2ms);  // the thread, if woken, has looked by now
  }
  EXPECT_LE(wakeups(tid) - start, 3) << "200 short ops, 2 ms apart, nothing else in flight";
  // Still watching: an op with an earlier deadline than the kept wakeup fires on time.
  auto work = std::make_shared<Work>(OpType::Barrier, 7, Millis(5000));
  wd.set_timeout_handler([](const Watchdog::Expired&) {});
  wd.attach(wd.watch(nullptr, OpType::Barrier, 7, Millis(200)), work);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(work->wait(Millis(3000)), TimeoutError);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
            scaled(1.0));
}

TEST(IdleThreads, DumpThreadSleepsUntilWokenAndWakesAtOnceForSigusr1) {
  FlightRecorder fr(4);
  const auto dir = fs::temp_directory_path() / fmt::format("collie_idle_{}", ::getpid());
  fs::remove_all(dir);
  const auto before = threads_named("collie-dump");
  DumpService ds(fr, dir.string());
  ds.start(3, nullptr);
  const int tid = new_thread("collie-dump", before);
  ASSERT_GE(tid, 0) << "no new thread named collie-dump";
  ASSERT_TRUE(testing::settled(tid)) << "the thread never went to sleep";
  EXPECT_LE(wakeups_over(tid, 1000ms), 1) << "no store to poll, nothing requested";
  const auto t0 = std::chrono::steady_clock::now();
  std::raise(SIGUSR1);
  while (ds.dumps_written() == 0 && std::chrono::steady_clock::now() - t0 < scaled(2s)) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(ds.dumps_written(), 1);
  fs::remove_all(dir);
}

// With a store, neither the dump thread nor the request watcher wakes until a request comes
// (the old dump thread polled the store at 100, 200, 400 ms ... backing off to 2 s: 4-6 wakeups
// in its first 2 s); then one request wakes them and the rank dumps.
TEST(IdleThreads, DumpThreadsWithAStoreSleepUntilARequest) {
  FlightRecorder fr(4);
  const auto dir = fs::temp_directory_path() / fmt::format("collie_idle_rq_{}", ::getpid());
  fs::remove_all(dir);
  const auto dump_before = threads_named("collie-dump");
  const auto req_before = threads_named("collie-dump-req");
  auto store = std::make_shared<HashStore>();
  DumpService ds(fr, dir.string());
  ds.start(0, store);
  const int dump = new_thread("collie-dump", dump_before);
  const int req = new_thread("collie-dump-req", req_before);
  ASSERT_GE(dump, 0) << "no new thread named collie-dump";
  ASSERT_GE(req, 0) << "no new thread named collie-dump-req";
  ASSERT_TRUE(testing::settled(dump)) << "collie-dump never went to sleep";
  ASSERT_TRUE(testing::settled(req)) << "collie-dump-req never went to sleep";
  const long d0 = wakeups(dump), r0 = wakeups(req);
  std::this_thread::sleep_for(2000ms);
  EXPECT_LE(wakeups(dump) - d0, 1);
  EXPECT_LE(wakeups(req) - r0, 1);
  request_cluster_dump(*store->clone());
  const auto t0 = std::chrono::steady_clock::now();
  while (ds.dumps_written() == 0 && std::chrono::steady_clock::now() - t0 < scaled(2s)) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(ds.dumps_written(), 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace collie
