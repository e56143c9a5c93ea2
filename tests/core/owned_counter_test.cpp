// OwnedCounter / OwnedMax (core/owned_counter.h): the first thread to raise a set owns it and
// raises it with plain stores; every other thread's additions still count, exactly once, however
// the threads interleave (run under TSan by the sanitize label).
#include "core/owned_counter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace collie {
namespace {

TEST(OwnedCounter, TheFirstThreadOwnsTheSetAndNoOtherThreadDoes) {
  CounterOwner owner;
  EXPECT_TRUE(owner.mine());
  EXPECT_TRUE(owner.mine());
  bool other = true;
  std::thread([&] { other = owner.mine(); }).join();
  EXPECT_FALSE(other);
  EXPECT_NE(this_thread_token(), 0u);
  uint32_t there = 0;
  std::thread([&] { there = this_thread_token(); }).join();
  EXPECT_NE(there, this_thread_token());
}

TEST(OwnedCounter, EveryThreadsAdditionsCountExactlyOnce) {
  CounterOwner owner;
  OwnedCounter<uint64_t> n;
  OwnedCounter<double> sum;
  OwnedMax<uint64_t> top;
  constexpr int kThreads = 4, kAdds = 1000000;
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }  // all at once: the adds interleave
      for (int i = 1; i <= kAdds; ++i) {
        const bool mine = owner.mine();
        n.add(mine, 1);
        sum.add(mine, 0.5, std::memory_order_release);
        top.raise(mine, static_cast<uint64_t>(t) * kAdds + i);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(n.load(), uint64_t{kThreads} * kAdds);
  EXPECT_DOUBLE_EQ(sum.load(), 0.5 * kThreads * kAdds);
  EXPECT_EQ(top.load(), uint64_t{kThreads} * kAdds);
}

TEST(OwnedCounter, AMaximumNeverFallsWhoeverRaisesIt) {
  CounterOwner owner;
  OwnedMax<uint64_t> m;
  m.raise(owner.mine(), 7);
  m.raise(owner.mine(), 5);
  EXPECT_EQ(m.load(), 7u);
  std::thread([&] { m.raise(owner.mine(), 9); }).join();
  EXPECT_EQ(m.load(), 9u);
  m.raise(owner.mine(), 8);  // the owner's own word is below the shared one
  EXPECT_EQ(m.load(), 9u);
}

}  // namespace
}  // namespace collie
