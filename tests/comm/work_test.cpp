// comm/work: the handle of one op — one completion, errors rethrown, deadlines, callbacks, polling.
#include "comm/work.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "core/error.h"

namespace collie {
namespace {

using namespace std::chrono_literals;

TEST(Work, TheFirstCompletionWinsAndLaterOnesAreNoOps) {
  Work w(OpType::AllReduce, 7, Millis(1000));
  EXPECT_FALSE(w.is_completed());
  EXPECT_FALSE(w.is_success());
  EXPECT_TRUE(w.complete());
  EXPECT_FALSE(w.complete(std::make_exception_ptr(NetworkError("late failure"))));
  EXPECT_TRUE(w.is_completed());
  EXPECT_TRUE(w.is_success());
  EXPECT_EQ(w.exception(), nullptr);
  EXPECT_NO_THROW(w.wait());
}

TEST(Work, WaitRethrowsTheOpsErrorWithItsType) {
  Work w(OpType::Broadcast, 3, Millis(1000));
  EXPECT_TRUE(w.complete(std::make_exception_ptr(NetworkError("peer 2 closed the connection"))));
  EXPECT_FALSE(w.is_success());
  EXPECT_NE(w.exception(), nullptr);
  try {
    w.wait();
    FAIL() << "wait() returned for a failed op";
  } catch (const NetworkError& e) {
    EXPECT_STREQ(e.what(), "peer 2 closed the connection");
  }
}

TEST(Work, ALateOpGivesTimeoutErrorNamingRankOpAndSeq) {
  Work w(OpType::AllGather, 57, Millis(60000));
  w.set_context(2);
  const auto start = std::chrono::steady_clock::now();
  try {
    w.wait(Millis(100));  // overrides the op's own 60 s
    FAIL() << "wait() returned for an op that never completed";
  } catch (const TimeoutError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[Rank 2] all_gather #57 did not complete within 100 ms"),
              std::string::npos)
        << what;
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 100ms);
  EXPECT_LT(took, 5s);
  EXPECT_FALSE(w.is_completed());  // a timed-out wait does not complete the op
}

TEST(Work, WaitReturnsWhenAnotherThreadCompletes) {
  Work w(OpType::Barrier, 1, Millis(10000));
  std::thread t([&] {
    std::this_thread::sleep_for(50ms);
    w.complete();
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NO_THROW(w.wait());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  t.join();
}

TEST(Work, CallbacksRunOnceOnTheCompletingThreadOrAtOnceWhenDone) {
  Work w(OpType::Reduce, 9, Millis(1000));
  std::atomic<int> calls{0};
  std::thread::id ran_on;
  w.on_complete([&](Work& done) {
    ++calls;
    ran_on = std::this_thread::get_id();
    EXPECT_EQ(done.seq(), 9u);
  });
  EXPECT_EQ(calls.load(), 0);
  std::thread completer([&] { w.complete(); });
  const std::thread::id completer_id = completer.get_id();
  completer.join();
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(ran_on, completer_id);
  w.complete();  // a second completion runs nothing again
  EXPECT_EQ(calls.load(), 1);
  bool late = false;
  w.on_complete([&](Work&) { late = true; });  // already complete: runs here, now
  EXPECT_TRUE(late);
}

// The allocation-free hook: runs once, after the callbacks, on the completing thread; holds its
// owner until then (and lets it go when the Work dies uncompleted); a second hook still runs;
// set on a completed Work it runs at once.
TEST(Work, ACompletionHookRunsOnceAndHoldsItsOwnerUntilThen) {
  struct Seen {
    std::atomic<int> hooks{0};
    int callbacks_before_hook = -1;
    int callbacks = 0;
  };
  auto seen = std::make_shared<Seen>();
  std::weak_ptr<Seen> alive = seen;
  const Work::CompletionFn fn = [](Work& w, void* ctx) {
    auto* s = static_cast<Seen*>(ctx);
    if (s->hooks++ == 0) s->callbacks_before_hook = s->callbacks;
    EXPECT_EQ(w.seq(), 3u);
  };
  {
    Work w(OpType::AllReduce, 3, Millis(1000));
    w.on_complete([s = seen.get()](Work&) { ++s->callbacks; });
    w.set_completion_hook(fn, seen.get(), seen);
    w.set_completion_hook(fn, seen.get(), seen);  // a second hook: a callback of its own
    Seen* raw = seen.get();
    seen.reset();
    EXPECT_FALSE(alive.expired());  // the Work holds it
    std::thread completer([&] { w.complete(); });
    completer.join();
    EXPECT_EQ(raw->hooks.load(), 2);
    EXPECT_EQ(raw->callbacks_before_hook, 1);
    EXPECT_TRUE(alive.expired());  // let go once run
    w.complete();
  }
  auto again = std::make_shared<Seen>();
  {
    Work done(OpType::AllReduce, 3, Millis(1000));
    done.complete();
    done.set_completion_hook(fn, again.get(), again);  // already complete: runs here, now
    EXPECT_EQ(again->hooks.load(), 1);
  }
  std::weak_ptr<Seen> dropped = again;
  {
    Work never(OpType::AllReduce, 3, Millis(1000));
    never.set_completion_hook(fn, again.get(), again);
    again.reset();
    EXPECT_FALSE(dropped.expired());
  }
  EXPECT_TRUE(dropped.expired());  // destroyed uncompleted: the hook never ran, the owner freed
}

// The completion races everything a Work offers at once: two completers (a success and a
// failure, as a backend and the watchdog), the hook being set, a callback being added and a
// waiter going to sleep. Whichever order the threads take, exactly one completion wins, the
// hook and the callback run exactly once, after the winner's error is in place, and the waiter
// wakes (a lost wake-up would hang it: its wait is bounded and fails the test).
TEST(Work, ACompletionRacingTheHookTheCallbacksAndAWaiterLosesNothing) {
  constexpr int kRounds = 2000;
  int successes = 0;
  for (int i = 0; i < kRounds; ++i) {
    Work w(OpType::AllReduce, static_cast<uint64_t>(i), Millis(60000));
    std::atomic<int> hooks{0}, callbacks{0}, wins{0};
    std::atomic<bool> hook_saw_error{false}, callback_saw_error{false};
    std::atomic<int> ready{0};
    auto start_together = [&] {
      ++ready;
      while (ready.load() < 5) std::this_thread::yield();
    };
    struct Ctx {
      std::atomic<int>* hooks;
      std::atomic<bool>* saw_error;
    } ctx{&hooks, &hook_saw_error};
    std::thread ok([&] {
      start_together();
      wins += w.complete();
    });
    std::thread failing([&] {
      start_together();
      wins += w.complete(std::make_exception_ptr(NetworkError("peer gone")));
    });
    std::thread hook([&] {
      start_together();
      w.set_completion_hook(
          [](Work& done, void* c) {
            auto* x = static_cast<Ctx*>(c);
            ++*x->hooks;
            x->saw_error->store(done.exception() != nullptr);
          },
          &ctx, nullptr);
    });
    std::thread callback([&] {
      start_together();
      w.on_complete([&](Work& done) {
        ++callbacks;
        callback_saw_error = done.exception() != nullptr;
      });
    });
    bool waited = false;
    std::thread waiter([&] {
      start_together();
      try {
        w.wait(Millis(20000));
        waited = true;
      } catch (const NetworkError&) {
        waited = true;
      } catch (const TimeoutError&) {
      }
    });
    for (std::thread* t : {&ok, &failing, &hook, &callback, &waiter}) t->join();
    ASSERT_EQ(wins.load(), 1) << "round " << i;
    ASSERT_EQ(hooks.load(), 1) << "round " << i;
    ASSERT_EQ(callbacks.load(), 1) << "round " << i;
    ASSERT_TRUE(waited) << "round " << i << ": the waiter was never woken";
    const bool failed = w.exception() != nullptr;
    ASSERT_EQ(hook_saw_error.load(), failed) << "round " << i;
    ASSERT_EQ(callback_saw_error.load(), failed) << "round " << i;
    ASSERT_EQ(w.is_success(), !failed);
    successes += !failed;
  }
  // Both completers won some rounds (else the race was never run).
  EXPECT_GT(successes, 0);
  EXPECT_LT(successes, kRounds);
}

// The narrowest window of the race above, on two threads only: the hook is set just as the op
// completes (each side starts after a random spin of its own, so that over the rounds the
// completion lands before, inside and after set_completion_hook). The hook runs exactly once.
TEST(Work, AHookSetJustAsTheOpCompletesRunsExactlyOnce) {
  constexpr int kRounds = 20000;
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  auto next = [&rng] {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  };
  auto spin = [](uint64_t n) {
    for (uint64_t k = 0; k < n; ++k) std::atomic_signal_fence(std::memory_order_seq_cst);
  };
  for (int i = 0; i < kRounds; ++i) {
    Work w(OpType::AllReduce, 1, Millis(60000));
    std::atomic<int> hooks{0}, ready{0};
    const uint64_t a = next() % 64, b = next() % 64;
    std::thread completer([&] {
      ++ready;
      while (ready.load() < 2) {
      }
      spin(a);
      w.complete();
    });
    ++ready;
    while (ready.load() < 2) {
    }
    spin(b);
    w.set_completion_hook([](Work&, void* c) { ++*static_cast<std::atomic<int>*>(c); }, &hooks,
                          nullptr);
    completer.join();
    ASSERT_EQ(hooks.load(), 1) << "round " << i;
  }
}

// An op that advances only when polled (as MPI requests do): done on the third progress() call.
class PolledWork final : public Work {
 public:
  PolledWork() : Work(OpType::AllToAll, 4, Millis(5000)) {}
  std::atomic<int> polls{0};

 protected:
  void progress() override {
    if (++polls == 3) complete();
  }
  bool needs_polling() const override { return true; }
};

TEST(Work, APolledOpIsDrivenByWaitAndByIsCompleted) {
  PolledWork w;
  EXPECT_FALSE(w.is_completed());  // one poll
  EXPECT_EQ(w.polls.load(), 1);
  EXPECT_NO_THROW(w.wait());  // polls until done
  EXPECT_EQ(w.polls.load(), 3);
  EXPECT_TRUE(w.is_success());
}

// An op polled for completion that acts on its own deadline (NCCL: abort the communicator, fail
// with the backend's error), set when the op is issued. Each poll takes 30 ms (a slow query), so
// the wait's last poll before its deadline comes too early and the next check comes after it.
class SelfTimingWork : public Work {
 public:
  explicit SelfTimingWork(Millis timeout)
      : Work(OpType::AllReduce, 1, timeout),
        deadline_(std::chrono::steady_clock::now() + timeout) {}
  std::atomic<int> polls{0};
  std::atomic<bool> aborted{false};

 protected:
  void progress() override {
    ++polls;
    if (std::chrono::steady_clock::now() >= deadline_) {
      aborted = true;
      complete(std::make_exception_ptr(TimeoutError("own deadline: the communicator was aborted")));
      return;
    }
    std::this_thread::sleep_for(30ms);
  }
  bool needs_polling() const override { return true; }

 private:
  const std::chrono::steady_clock::time_point deadline_;
};

// Seen on an H200: wait() gave up on its own deadline between two polls, so the NCCL op's
// timeout never aborted the communicator and the next op on it ran as if nothing had happened.
TEST(Work, APolledOpDecidesItsOwnTimeoutWhenTheWaitRunsOut) {
  SelfTimingWork w(Millis(100));
  try {
    w.wait();
    ADD_FAILURE() << "a late op completed";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("own deadline"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(w.aborted.load());
  EXPECT_TRUE(w.is_completed());
  // A shorter wait than the op's timeout leaves the op running: the wait's own TimeoutError.
  SelfTimingWork longer(Millis(60000));
  EXPECT_THROW(longer.wait(Millis(50)), TimeoutError);
  EXPECT_FALSE(longer.aborted.load());
  EXPECT_FALSE(longer.is_completed());
}

}  // namespace
}  // namespace collie
