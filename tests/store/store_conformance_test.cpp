// One conformance suite for every Store implementation. Each implementation contributes a
// factory; the same assertions run against all of them.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "core/error.h"
#include "store/hash_store.h"
#include "store/prefix_store.h"
#include "store_factories.h"
#include "support/thread_probe.h"
#include "support/time_scale.h"

namespace collie {
namespace {

class StoreConformance : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override { env_ = GetParam().make(); }
  void TearDown() override { env_.reset(); }
  Store& s() { return *env_->primary; }
  std::shared_ptr<Store> other() { return env_->connect(); }
  std::unique_ptr<StoreFixture> env_;
};

TEST_P(StoreConformance, SetGetAcrossClients) {
  s().set("a", "hello");
  EXPECT_EQ(other()->get_string("a"), "hello");
  s().set("a", "bye");
  EXPECT_EQ(s().get_string("a"), "bye");
  Bytes bin = {0, 1, 2, 255, 0};
  other()->set("bin", bin);
  EXPECT_EQ(s().get("bin"), bin);
}

// The set comes once the getter sleeps in its get (testing::asleep: FileStore's wait polls).
TEST_P(StoreConformance, GetWaitsForALaterSet) {
  auto c = other();
  const int getter = testing::current_tid();
  std::thread t([c, getter] {
    EXPECT_TRUE(testing::asleep(getter)) << "the get never blocked";
    c->set("late", "x");
  });
  EXPECT_EQ(s().get_string("late"), "x");
  t.join();
}

TEST_P(StoreConformance, AddIsAtomicAcrossClients) {
  constexpr int kThreads = 8, kAdds = 50;
  std::vector<std::thread> ts;
  for (int i = 0; i < kThreads; ++i) {
    ts.emplace_back([this] {
      auto c = other();
      for (int j = 0; j < kAdds; ++j) c->add("ctr", 1);
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(s().add("ctr", 0), kThreads * kAdds);
  EXPECT_EQ(s().add("neg", -5), -5);
}

TEST_P(StoreConformance, CheckWaitAndTimeoutNamesKeyAndElapsed) {
  EXPECT_FALSE(s().check({"k1"}));
  s().set("k1", "v");
  EXPECT_TRUE(s().check({"k1"}));
  EXPECT_FALSE(s().check({"k1", "k2"}));
  s().wait({"k1"}, std::chrono::milliseconds(100));
  const auto start = std::chrono::steady_clock::now();
  try {
    s().wait({"never"}, std::chrono::milliseconds(200));
    FAIL() << "wait did not time out";
  } catch (const StoreError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("never"), std::string::npos) << msg;
    EXPECT_NE(msg.find(" ms"), std::string::npos) << msg;
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(190));
  EXPECT_LT(took, testing::scaled(std::chrono::seconds(5)));
}

TEST_P(StoreConformance, GetTimesOutWithStoreTimeout) {
  s().set_timeout(std::chrono::milliseconds(150));
  EXPECT_THROW(s().get("absent"), StoreError);
}

TEST_P(StoreConformance, CompareSet) {
  EXPECT_EQ(to_string(s().compare_set("cs", Bytes{}, to_bytes("first"))), "first");
  EXPECT_EQ(to_string(s().compare_set("cs", to_bytes("wrong"), to_bytes("x"))), "first");
  EXPECT_EQ(to_string(s().compare_set("cs", to_bytes("first"), to_bytes("second"))), "second");
  EXPECT_EQ(s().get_string("cs"), "second");
  // Missing key with a non-empty expectation: nothing is set, expected is returned.
  EXPECT_EQ(to_string(s().compare_set("missing", to_bytes("e"), to_bytes("d"))), "e");
  EXPECT_FALSE(s().check({"missing"}));
}

TEST_P(StoreConformance, DeleteAndNumKeys) {
  const int64_t base = s().num_keys();
  s().set("d1", "1");
  s().set("d2", "2");
  EXPECT_EQ(s().num_keys(), base + 2);
  EXPECT_TRUE(s().delete_key("d1"));
  EXPECT_FALSE(s().delete_key("d1"));
  EXPECT_EQ(s().num_keys(), base + 1);
  EXPECT_FALSE(s().check({"d1"}));
}

TEST_P(StoreConformance, AppendAndMulti) {
  s().append("log", to_bytes("ab"));
  other()->append("log", to_bytes("cd"));
  EXPECT_EQ(s().get_string("log"), "abcd");
  s().multi_set({"m1", "m2", "m3"}, {to_bytes("x"), to_bytes(""), to_bytes("zz")});
  auto v = other()->multi_get({"m3", "m1", "m2"});
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(to_string(v[0]), "zz");
  EXPECT_EQ(to_string(v[1]), "x");
  EXPECT_TRUE(v[2].empty());
  EXPECT_THROW(s().multi_set({"a"}, {}), InvalidArgument);
}

TEST_P(StoreConformance, AddOnNonIntegerFails) {
  s().set("txt", "abc");
  EXPECT_THROW(s().add("txt", 1), StoreError);
}

TEST_P(StoreConformance, LargeValue) {
  Bytes big(4 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7);
  s().set("big", big);
  EXPECT_EQ(other()->get("big"), big);
}

TEST_P(StoreConformance, SetAndGatherIsAnAllGather) {
  s().set("old", "stale");
  auto c = other();
  std::vector<Bytes> theirs;
  const int first = testing::current_tid();
  std::thread t([&] {
    EXPECT_TRUE(testing::asleep(first)) << "the first set_and_gather never blocked";
    theirs = c->set_and_gather("", "g/1", to_bytes("one"), {"g/0", "g/1"}, kUseGroupTimeout);
  });
  auto mine =
      s().set_and_gather("old", "g/0", to_bytes("zero"), {"g/0", "g/1"}, std::chrono::seconds(5));
  t.join();
  ASSERT_EQ(mine.size(), 2u);
  EXPECT_EQ(to_string(mine[0]), "zero");
  EXPECT_EQ(to_string(mine[1]), "one");
  EXPECT_EQ(theirs, mine);
  EXPECT_FALSE(s().check({"old"}));  // dropped
}

TEST_P(StoreConformance, SetAndGatherTimeoutNamesMissingKeyAndKeepsTheSet) {
  try {
    s().set_and_gather("", "t/0", to_bytes("x"), {"t/0", "t/1"}, std::chrono::milliseconds(200));
    FAIL() << "set_and_gather did not time out";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("t/1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(other()->get_string("t/0"), "x");
  // The connection is still in step: later calls work.
  s().set("after", "ok");
  EXPECT_EQ(s().get_string("after"), "ok");
}

TEST_P(StoreConformance, CloneIsAnotherClientWhoseWaitsBlockNobody) {
  auto c = s().clone();
  EXPECT_EQ(c->timeout(), s().timeout());
  c->set("from_clone", "1");
  EXPECT_EQ(s().get_string("from_clone"), "1");
  // A wait parked on the clone must not hold up the original's requests.
  std::atomic<int> waiter_tid{-1};
  std::thread waiter([c, &waiter_tid] {
    waiter_tid = testing::current_tid();
    c->wait({"late_key"}, std::chrono::seconds(10));
  });
  EXPECT_TRUE(testing::asleep(waiter_tid)) << "the wait on the clone never blocked";
  const auto start = std::chrono::steady_clock::now();
  s().set("unrelated", "x");
  EXPECT_EQ(s().get_string("unrelated"), "x");
  EXPECT_LT(std::chrono::steady_clock::now() - start, testing::scaled(std::chrono::seconds(2)));
  s().set("late_key", "now");
  waiter.join();
}

// The use interrupt() exists for: a thread parked in wait() on a clone of its own, stopped from
// another thread. The wait ends at once, the clone stays unusable, and every other client of the
// store (the original, another clone, a waiter parked elsewhere) is untouched.
TEST_P(StoreConformance, InterruptEndsAParkedWaitAtOnceAndLeavesOtherClientsWorking) {
  auto c = s().clone();
  auto bystander = s().clone();
  std::string error, bystander_got;
  std::chrono::steady_clock::duration parked_for{};
  std::atomic<int> waiter_tid{-1}, bystander_tid{-1};
  std::thread waiter([&] {
    waiter_tid = testing::current_tid();
    const auto t0 = std::chrono::steady_clock::now();
    try {
      c->wait({"never_set"}, std::chrono::seconds(60));
    } catch (const StoreError& e) {
      error = e.what();
    }
    parked_for = std::chrono::steady_clock::now() - t0;
  });
  std::thread other_waiter([&] {
    bystander_tid = testing::current_tid();
    bystander_got = bystander->get_string("set_later");
  });
  ASSERT_TRUE(testing::asleep(waiter_tid)) << "the wait never blocked";
  ASSERT_TRUE(testing::asleep(bystander_tid)) << "the bystander's get never blocked";
  const auto t0 = std::chrono::steady_clock::now();
  c->interrupt();
  waiter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, testing::scaled(std::chrono::seconds(1)));
  EXPECT_GE(parked_for, std::chrono::milliseconds(40));  // it was parked, not refused early
  EXPECT_NE(error.find("interrupted"), std::string::npos) << error;
  EXPECT_NE(error.find("never_set"), std::string::npos) << error;

  // Later calls on the interrupted client fail the same way, at once; a second interrupt is
  // harmless.
  c->interrupt();
  for (auto call : std::vector<std::function<void()>>{
           [&] { c->set("k", "v"); }, [&] { c->get("k"); }, [&] { c->check({"k"}); },
           [&] { c->wait({"k"}, std::chrono::seconds(30)); }, [&] { c->add("n", 1); }}) {
    const auto t1 = std::chrono::steady_clock::now();
    try {
      call();
      ADD_FAILURE() << "a call on an interrupted client succeeded";
    } catch (const StoreError& e) {
      EXPECT_NE(std::string(e.what()).find("interrupted"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t1, testing::scaled(std::chrono::seconds(1)));
  }

  // Everyone else: the original, a fresh client, and the bystander still parked in its get.
  s().set("after", "ok");
  EXPECT_EQ(other()->get_string("after"), "ok");
  EXPECT_EQ(s().clone()->get_string("after"), "ok");
  other()->set("set_later", "seen");
  other_waiter.join();
  EXPECT_EQ(bystander_got, "seen");
}

// Store::gather: each member on a client of its own, as ranks are.
std::vector<Store::GatherResult> gather_on_threads(StoreFixture& env, const std::string& name,
                                                   const std::vector<int>& members, int of,
                                                   Store::GatherRead read, Millis timeout) {
  std::vector<Store::GatherResult> out(members.size());
  std::vector<std::thread> ts;
  for (size_t i = 0; i < members.size(); ++i) {
    ts.emplace_back([&, i] {
      auto c = env.connect();
      const int m = members[i];
      out[i] = c->gather(name, m, of, to_bytes("value of " + std::to_string(m)), read, timeout);
    });
  }
  for (auto& t : ts) t.join();
  return out;
}

TEST_P(StoreConformance, GatherAllGivesEveryMemberEveryValueInMemberOrder) {
  auto res = gather_on_threads(*env_, "g", {3, 0, 4, 1, 2}, 5, Store::GatherRead::kAll,
                               std::chrono::seconds(30));
  for (const auto& r : res) {
    ASSERT_TRUE(r.complete);
    EXPECT_TRUE(r.missing.empty());
    ASSERT_EQ(r.values.size(), 5u);
    for (int m = 0; m < 5; ++m) EXPECT_EQ(to_string(r.values[m]), "value of " + std::to_string(m));
  }
  // A second gather under another name is independent of the first.
  auto again =
      gather_on_threads(*env_, "g2", {1, 0}, 2, Store::GatherRead::kAll, std::chrono::seconds(30));
  EXPECT_EQ(to_string(again[1].values[1]), "value of 1");
}

// kRoot: the others do not wait (they return before member 0 even arrives); member 0 gets all.
TEST_P(StoreConformance, GatherRootOnlyMemberZeroWaitsAndReads) {
  auto res =
      gather_on_threads(*env_, "r", {1, 2}, 3, Store::GatherRead::kRoot, std::chrono::seconds(30));
  for (const auto& r : res) {
    EXPECT_TRUE(r.complete);
    EXPECT_TRUE(r.values.empty());
  }
  auto root = s().gather("r", 0, 3, to_bytes("value of 0"), Store::GatherRead::kRoot,
                         std::chrono::seconds(30));
  ASSERT_TRUE(root.complete);
  ASSERT_EQ(root.values.size(), 3u);
  EXPECT_EQ(to_string(root.values[2]), "value of 2");
}

// kNone is a barrier: no member returns before the last one arrives; nothing is read.
TEST_P(StoreConformance, GatherNoneIsABarrier) {
  std::atomic<int> early_tid{-1};
  std::atomic<bool> returned{false};
  Store::GatherResult early;
  std::thread t([&] {
    early_tid = testing::current_tid();
    early = other()->gather("b", 0, 2, {}, Store::GatherRead::kNone, std::chrono::seconds(30));
    returned = true;
  });
  ASSERT_TRUE(testing::asleep(early_tid)) << "the first member never waited";
  EXPECT_FALSE(returned.load());
  auto last = s().gather("b", 1, 2, {}, Store::GatherRead::kNone, std::chrono::seconds(30));
  t.join();
  EXPECT_TRUE(last.complete);
  EXPECT_TRUE(early.complete);
  EXPECT_TRUE(early.values.empty());
  EXPECT_TRUE(last.values.empty());
}

// A timed-out gather names exactly the members that never came, to every member that waited.
TEST_P(StoreConformance, GatherTimeoutNamesTheMissingMembers) {
  auto res = gather_on_threads(*env_, "t", {0, 2, 3, 6}, 8, Store::GatherRead::kAll,
                               std::chrono::milliseconds(300));
  for (const auto& r : res) {
    EXPECT_FALSE(r.complete);
    EXPECT_EQ(r.missing, (std::vector<int>{1, 4, 5, 7}));
    EXPECT_TRUE(r.values.empty());
  }
}

// kColumn: member m's value holds one cell per member; each member reads its own cell of every
// value (what a full-mesh connect needs: the port each peer opened for it).
TEST_P(StoreConformance, GatherColumnGivesEachMemberItsOwnCells) {
  constexpr int kN = 4;
  std::vector<Store::GatherResult> res(kN);
  std::vector<std::thread> ts;
  for (int m = 0; m < kN; ++m) {
    ts.emplace_back([&, m] {
      Bytes v;
      for (int to = 0; to < kN; ++to) {
        v.push_back(static_cast<uint8_t>('a' + m));
        v.push_back(static_cast<uint8_t>('0' + to));
      }
      res[m] = env_->connect()->gather("c", m, kN, v, Store::GatherRead::kColumn,
                                       std::chrono::seconds(30));
    });
  }
  for (auto& t : ts) t.join();
  for (int m = 0; m < kN; ++m) {
    ASSERT_TRUE(res[m].complete);
    ASSERT_EQ(res[m].values.size(), static_cast<size_t>(kN));
    for (int from = 0; from < kN; ++from) {
      const std::string want = {static_cast<char>('a' + from), static_cast<char>('0' + m)};
      EXPECT_EQ(to_string(res[m].values[from]), want);
    }
  }
  EXPECT_THROW(
      s().gather("c2", 0, 3, Bytes(4), Store::GatherRead::kColumn, std::chrono::seconds(1)),
      InvalidArgument);  // 4 bytes are not 3 cells
}

TEST_P(StoreConformance, GatherRefusesAMemberTwiceAndDisagreeingSizes) {
  EXPECT_THROW(s().gather("x", 3, 3, {}, Store::GatherRead::kAll, std::chrono::seconds(1)),
               InvalidArgument);
  EXPECT_THROW(s().gather("x", 0, 0, {}, Store::GatherRead::kAll, std::chrono::seconds(1)),
               InvalidArgument);
  EXPECT_TRUE(
      s().gather("y", 1, 3, {}, Store::GatherRead::kRoot, std::chrono::seconds(1)).complete);
  EXPECT_THROW(s().gather("y", 1, 3, {}, Store::GatherRead::kRoot, std::chrono::seconds(1)),
               InvalidArgument);
  EXPECT_THROW(other()->gather("y", 2, 4, {}, Store::GatherRead::kRoot, std::chrono::seconds(1)),
               InvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(AllStores, StoreConformance, ::testing::ValuesIn(all_store_factories()),
                         [](const auto& info) { return info.param.name; });

TEST(PrefixStore, NamespacesKeys) {
  auto base = std::make_shared<HashStore>();
  PrefixStore a("a", base), b("b", base);
  a.set("k", "1");
  b.set("k", "2");
  EXPECT_EQ(a.get_string("k"), "1");
  EXPECT_EQ(b.get_string("k"), "2");
  EXPECT_EQ(base->get_string("a/k"), "1");
}

}  // namespace
}  // namespace collie
