#include "debug/watchdog.h"

#include <gtest/gtest.h>

#include <thread>

#include "core/clock.h"
#include "core/error.h"
#include "debug/flight_recorder.h"
#include "debug/tracing_process_group.h"
#include "support/fake_backend.h"

namespace collie {
namespace {

std::shared_ptr<GroupTrace> trace() {
  auto g = std::make_shared<GroupTrace>();
  g->pg_id = "0";
  g->desc = "default_pg";
  g->backend = "gloo";
  g->global_rank = 2;
  g->last_enqueued_collective = 7;
  g->last_started_collective = 7;
  g->last_completed_collective.raise(g->completing.mine(), 6);
  return g;
}

std::string wait_error(Work& w) {
  try {
    w.wait(Millis(0));
  } catch (const TimeoutError& e) {
    return e.what();
  }
  return "";
}

TEST(Watchdog, FailsTheWorkAtTheDeadlineNamingOpAndGroupProgress) {
  FakeClock clock;
  Watchdog wd(clock, /*start_thread=*/false);
  std::vector<Watchdog::Expired> fired;
  wd.set_timeout_handler([&](const Watchdog::Expired& e) { fired.push_back(e); });
  auto work = std::make_shared<Work>(OpType::AllReduce, 7, Millis(1000));
  const uint64_t t = wd.watch(trace(), OpType::AllReduce, 7, Millis(1000));
  wd.attach(t, work);
  clock.advance(std::chrono::milliseconds(999));
  EXPECT_EQ(wd.check_now(), 0);
  EXPECT_FALSE(work->is_completed());
  clock.advance(std::chrono::milliseconds(2));
  EXPECT_EQ(wd.check_now(), 1);
  ASSERT_TRUE(work->is_completed());
  EXPECT_FALSE(work->is_success());
  const std::string msg = wait_error(*work);
  EXPECT_NE(msg.find("[Rank 2] watchdog: all_reduce #7 in group 0 'default_pg' (gloo) did not "
                     "complete within 1000 ms"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("last enqueued #7, started #7, completed #6"), std::string::npos) << msg;
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].seq, 7u);
  EXPECT_EQ(wd.pending(), 0u);
}

TEST(Watchdog, UnwatchedOpsNeverFire) {
  FakeClock clock;
  Watchdog wd(clock, false);
  int fired = 0;
  wd.set_timeout_handler([&](const Watchdog::Expired&) { ++fired; });
  const uint64_t a = wd.watch(trace(), OpType::Broadcast, 1, Millis(10));
  wd.watch(trace(), OpType::Broadcast, 2, Millis(50));
  wd.unwatch(a);
  clock.advance(std::chrono::milliseconds(20));
  EXPECT_EQ(wd.check_now(), 0);
  clock.advance(std::chrono::milliseconds(40));
  EXPECT_EQ(wd.check_now(), 1);
  EXPECT_EQ(fired, 1);
}

TEST(Watchdog, ThreadNoticesExpiryDrivenByFakeClock) {
  FakeClock clock;
  Watchdog wd(clock, /*start_thread=*/true);
  wd.set_timeout_handler([](const Watchdog::Expired&) {});
  auto work = std::make_shared<Work>(OpType::Barrier, 3, Millis(500));
  wd.attach(wd.watch(trace(), OpType::Barrier, 3, Millis(500)), work);
  clock.advance(std::chrono::milliseconds(600));
  // With a FakeClock the thread re-reads the time every few milliseconds of real time.
  EXPECT_THROW(work->wait(Millis(2000)), TimeoutError);
  EXPECT_NE(wait_error(*work).find("barrier #3"), std::string::npos);
}

// The process watchdog's own thread on the real clock, behind the real tracing wrapper, over a
// backend that never finishes the op and has no timeout of its own. Only the watchdog thread
// can end the wait early with its own message: if it does nothing, wait() runs into its own
// 10 s limit with Work's message (no "watchdog:"), and both checks below fail (verified by
// disabling the thread).
TEST(Watchdog, ProcessWatchdogThreadEndsAStuckOpOnTheRealClock) {
  auto backend = std::make_shared<testing::FakeBackend>(
      testing::fake_info(0, 2, std::make_shared<HashStore>(), Millis(400)), /*hold=*/true);
  FlightRecorder fr(16);
  Watchdog wd(Clock::system());  // the thread runs, as in Watchdog::global()
  std::vector<std::string> fired;
  std::mutex mu;
  wd.set_timeout_handler([&](const Watchdog::Expired& e) {
    std::lock_guard<std::mutex> lk(mu);
    fired.push_back(e.message);
  });
  auto pg = std::make_shared<TracingProcessGroup>(backend, &fr, &wd,
                                                  std::vector<std::shared_ptr<OpObserver>>{});
  std::vector<float> buf(8);
  const auto t0 = std::chrono::steady_clock::now();
  auto w = pg->all_reduce(TensorView::cpu(buf.data(), buf.size(), DType::Float32));
  std::string msg;
  try {
    w->wait(Millis(10000));
  } catch (const TimeoutError& e) {
    msg = e.what();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(msg.find("[Rank 0] watchdog: all_reduce #1 in group 0 'default_pg' (fake) did not "
                     "complete within 500 ms"),
            std::string::npos)
      << msg;
  // Deadline 400 ms + 100 ms grace; the thread looks at least every 100 ms.
  EXPECT_GE(s, 0.45);
  EXPECT_LT(s, 3.0);
  std::lock_guard<std::mutex> lk(mu);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0], msg);
  EXPECT_EQ(wd.pending(), 0u);
}

}  // namespace
}  // namespace collie
