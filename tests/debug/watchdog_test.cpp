#include "debug/watchdog.h"

#include <gtest/gtest.h>

#include <thread>

#include "core/error.h"
#include "debug/flight_recorder.h"

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
  g->last_completed_collective = 6;
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
  // The thread re-checks at least every 100 ms of real time.
  EXPECT_THROW(work->wait(Millis(2000)), TimeoutError);
  EXPECT_NE(wait_error(*work).find("barrier #3"), std::string::npos);
}

}  // namespace
}  // namespace collie
