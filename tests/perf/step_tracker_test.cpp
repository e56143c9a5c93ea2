// The perf step tracker's laggard report over a real TcpStore (rank 0 hosts it, as in a run), its
// answering thread (parked in a store wait, stopped by Store::interrupt) and its sleep: neither of
// its threads wakes on a timer while a step is under its deadline.
#include "perf/step_tracker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "support/local_tcp_store.h"
#include "support/thread_probe.h"
#include "support/time_scale.h"

namespace collie::perf {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<StepTracker> tracker(std::shared_ptr<Store> s, int rank, uint64_t seq) {
  return std::make_unique<StepTracker>(std::move(s), rank, 3, Millis(600000), 3,
                                       [seq] { return seq; });
}

// Every rank is in the same step; rank 2 has issued one collective fewer. Rank 0's report asks
// the others for their sequence numbers and names rank 2 by its number, well before the 1.5 s it
// would wait for a rank that does not answer.
TEST(StepTracker, LaggardReportNamesTheRankBehindBySequenceNumber) {
  testing::LocalTcpStore st;
  auto r0 = tracker(st.server, 0, 5);
  auto r1 = tracker(st.client(), 1, 5);
  auto r2 = tracker(st.client(), 2, 4);
  for (auto* t : {r0.get(), r1.get(), r2.get()}) t->enter("all_reduce float sum count 2");
  const auto t0 = std::chrono::steady_clock::now();
  const std::string report = r0->laggards();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1400ms) << report;
  EXPECT_EQ(report,
            "rank 0 waits in collective #5; rank 2 has only issued collective #4 (in 'all_reduce "
            "float sum count 2')");
}

// A rank whose step is behind is named by its check-in, without asking anyone.
TEST(StepTracker, LaggardReportNamesTheRankThatNeverReachedTheStep) {
  testing::LocalTcpStore st;
  auto r0 = tracker(st.server, 0, 9);
  auto r1 = tracker(st.client(), 1, 9);
  auto r2 = tracker(st.client(), 2, 3);
  r0->enter("a");
  r1->enter("a");
  r2->enter("warmup");
  r0->enter("b");
  r1->enter("b");
  EXPECT_EQ(r0->laggards(), "1 of 3 ranks behind: rank 2 is still in 'warmup'");
}

// Destruction interrupts the answering thread's store wait at once (it is re-armed only hourly),
// and the store and the other clients stay usable.
TEST(StepTracker, DestructionEndsTheParkedAnswerAtOnce) {
  testing::LocalTcpStore st;
  const auto answer_before = testing::threads_named("collie-laggard");
  auto r1 = tracker(st.client(), 1, 0);
  const int answer = testing::new_thread("collie-laggard", answer_before);
  ASSERT_GE(answer, 0) << "no thread named collie-laggard";
  ASSERT_TRUE(testing::settled(answer)) << "collie-laggard never parked in its wait";
  const auto t0 = std::chrono::steady_clock::now();
  r1.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, testing::scaled(1s));
  st.server->set("still", "usable");
  EXPECT_EQ(st.client()->get_string("still"), "usable");
}

// Neither thread wakes while a step runs under its deadline: the old tracker polled the store
// every 250 ms on every rank (4 wakeups and 4 requests to rank 0 a second).
TEST(StepTracker, ThreadsSleepWhileAStepIsUnderItsDeadline) {
  testing::LocalTcpStore st;
  const auto steps_before = testing::threads_named("collie-steps");
  const auto answer_before = testing::threads_named("collie-laggard");
  auto r1 = tracker(st.client(), 1, 0);
  const int steps = testing::new_thread("collie-steps", steps_before);
  const int answer = testing::new_thread("collie-laggard", answer_before);
  ASSERT_GE(steps, 0) << "no thread named collie-steps";
  ASSERT_GE(answer, 0) << "no thread named collie-laggard";
  r1->enter("a long step");
  ASSERT_TRUE(testing::settled(steps)) << "collie-steps never went to sleep";
  ASSERT_TRUE(testing::settled(answer)) << "collie-laggard never went to sleep";
  const long s0 = testing::wakeups(steps), a0 = testing::wakeups(answer);
  for (int i = 0; i < 20; ++i) {  // steps entered back to back, as the driver does
    r1->enter("step " + std::to_string(i));
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_LE(testing::wakeups(steps) - s0, 1);
  EXPECT_LE(testing::wakeups(answer) - a0, 1);
}

}  // namespace
}  // namespace collie::perf
