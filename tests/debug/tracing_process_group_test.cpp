#include "debug/tracing_process_group.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "debug/watchdog.h"
#include "support/fake_backend.h"

namespace collie {
namespace {

using testing::fake_info;
using testing::FakeBackend;

struct CountingObserver : OpObserver {
  std::atomic<int> scheduled{0}, completed{0}, failed{0};
  void on_op_scheduled(const OpEvent&) override { ++scheduled; }
  void on_op_completed(const OpEvent& e) override {
    ++completed;
    if (e.failed) ++failed;
  }
};

struct Fixture {
  FakeClock clock;
  FlightRecorder fr{16, &clock};
  Watchdog wd{clock, false};
  std::shared_ptr<FakeBackend> backend;
  std::shared_ptr<CountingObserver> obs = std::make_shared<CountingObserver>();
  std::shared_ptr<TracingProcessGroup> pg;
  explicit Fixture(bool hold) {
    wd.set_timeout_handler([](const Watchdog::Expired&) {});
    backend = std::make_shared<FakeBackend>(
        fake_info(0, 2, std::make_shared<HashStore>(), Millis(1000)), hold);
    pg = std::make_shared<TracingProcessGroup>(backend, &fr, &wd,
                                               std::vector<std::shared_ptr<OpObserver>>{obs});
  }
};

TEST(TracingProcessGroup, RecordsScheduledStartedCompleted) {
  Fixture f(/*hold=*/true);
  std::vector<float> buf(8);
  auto w = f.pg->all_reduce(TensorView::cpu(buf.data(), buf.size(), DType::Float32));
  auto snap = f.fr.snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].state, FrState::Started);
  EXPECT_STREQ(snap[0].profiling_name, "fake:all_reduce");
  EXPECT_EQ(f.pg->trace()->last_enqueued_collective.load(), 1u);
  EXPECT_EQ(f.pg->trace()->last_completed_collective.load(), 0u);
  EXPECT_EQ(f.wd.pending(), 1u);
  f.backend->held()[0]->complete();
  EXPECT_EQ(f.fr.snapshot()[0].state, FrState::Completed);
  EXPECT_EQ(f.pg->trace()->last_completed_collective.load(), 1u);
  EXPECT_EQ(f.wd.pending(), 0u);
  EXPECT_EQ(f.obs->scheduled.load(), 1);
  EXPECT_EQ(f.obs->completed.load(), 1);
}

TEST(TracingProcessGroup, WatchdogFailsAStuckOp) {
  Fixture f(/*hold=*/true);
  auto w = f.pg->barrier();
  f.clock.advance(Millis(1000));  // the backend's own timeout would report first
  EXPECT_EQ(f.wd.check_now(), 0);
  f.clock.advance(watchdog_grace(Millis(1000)) + Millis(1));
  EXPECT_EQ(f.wd.check_now(), 1);
  EXPECT_THROW(w->wait(), TimeoutError);
  auto snap = f.fr.snapshot();
  EXPECT_EQ(snap[0].state, FrState::Completed);
  EXPECT_TRUE(snap[0].failed);
  EXPECT_EQ(f.pg->trace()->last_completed_collective.load(), 0u);
  EXPECT_EQ(f.obs->failed.load(), 1);
}

TEST(TracingProcessGroup, P2PSeqAndImmediateCompletion) {
  Fixture f(/*hold=*/false);
  std::vector<int32_t> buf(2);
  f.pg->send(TensorView::cpu(buf.data(), 2, DType::Int32), 1)->wait();
  f.pg->all_reduce(TensorView::cpu(buf.data(), 2, DType::Int32))->wait();
  auto snap = f.fr.snapshot();
  ASSERT_EQ(snap.size(), 2u);
  EXPECT_TRUE(snap[0].is_p2p);
  EXPECT_EQ(snap[0].p2p_seq_id, 1u);
  EXPECT_EQ(snap[1].collective_seq_id, 1u);
  EXPECT_EQ(snap[1].op_id, 2u);
  EXPECT_EQ(f.pg->trace()->last_completed_p2p.load(), 1u);
  EXPECT_EQ(f.wd.pending(), 0u);
}

}  // namespace
}  // namespace collie
