// AgreementTree with ranks as threads over loopback and a HashStore: every rank gets the total
// whatever the group's size and the order the ranks arrive in, a rank holds at most 3
// connections, a rank that never comes or leaves is named, strangers are turned away at connect.
#include "debug/agreement_tree.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "store/hash_store.h"
#include "store/store.h"

namespace collie {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Runs fn(rank, tree) on n threads after connecting them; returns each rank's error ("" = none).
std::vector<std::string> run_tree(int n, Millis timeout,
                                  const std::function<void(int, AgreementTree&)>& fn,
                                  std::shared_ptr<Store> store = nullptr,
                                  const std::function<void(int)>& before_connect = nullptr) {
  if (!store) store = std::make_shared<HashStore>(timeout);
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r) {
    ts.emplace_back([&, r] {
      try {
        if (before_connect) before_connect(r);
        auto tree = AgreementTree::connect(store, "tree_test", r, n, "127.0.0.1", timeout);
        fn(r, *tree);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : ts) t.join();
  return errors;
}

// Sum of 64-bit words (commutative and associative).
void add_words(uint8_t* acc, const uint8_t* other, size_t len) {
  for (size_t i = 0; i + 8 <= len; i += 8) {
    uint64_t a, b;
    std::memcpy(&a, acc + i, 8);
    std::memcpy(&b, other + i, 8);
    a += b;
    std::memcpy(acc + i, &a, 8);
  }
}

SteadyClock::time_point in(Millis ms) { return SteadyClock::now() + ms; }

TEST(AgreementTree, EveryRankGetsTheTotalAtAnySize) {
  for (int n : {1, 2, 3, 4, 7, 64}) {
    auto errs = run_tree(n, Millis(20000), [n](int me, AgreementTree& t) {
      EXPECT_LE(t.descriptors(), 3);
      for (int k = 0; k < 20; ++k) {
        // Word 0: the sum of ranks; word 1: rank k's marker only; word 2: 1 per rank.
        uint64_t v[3] = {static_cast<uint64_t>(me), me == k % n ? 1000u + k : 0u, 1};
        uint8_t scratch[sizeof(v) * 2];
        t.allreduce(reinterpret_cast<uint8_t*>(v), sizeof(v), scratch, add_words,
                    in(Millis(20000)));
        ASSERT_EQ(v[0], static_cast<uint64_t>(n) * (n - 1) / 2) << "n " << n << " k " << k;
        ASSERT_EQ(v[1], 1000u + k);
        ASSERT_EQ(v[2], static_cast<uint64_t>(n));
      }
      // A rank moves at most 3 frames each way per call, whatever n is.
      EXPECT_LE(t.traffic().frames_sent, 3u * 20);
      EXPECT_LE(t.traffic().frames_received, 3u * 20);
    });
    for (int r = 0; r < n; ++r) EXPECT_EQ(errs[r], "") << "n " << n << " rank " << r;
  }
}

TEST(AgreementTree, RanksArrivingInAnyOrderAgree) {
  // Each call, the ranks arrive in a different random order (a random delay each); values larger
  // than a socket buffer cross between the roots too.
  const int n = 7;
  std::vector<std::vector<int>> delay_us(40, std::vector<int>(n));
  std::mt19937 rng(7);
  for (auto& d : delay_us) {
    for (int& x : d) x = static_cast<int>(rng() % 3000);
  }
  auto errs = run_tree(n, Millis(20000), [&](int me, AgreementTree& t) {
    for (int k = 0; k < 40; ++k) {
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us[k][me]));
      const size_t words = k % 2 ? 3 : 1 << 17;  // 1 MiB every other call
      std::vector<uint64_t> v(words, static_cast<uint64_t>(me + k)), scratch(2 * words);
      t.allreduce(reinterpret_cast<uint8_t*>(v.data()), words * 8,
                  reinterpret_cast<uint8_t*>(scratch.data()), add_words, in(Millis(20000)));
      const uint64_t want = static_cast<uint64_t>(n) * k + n * (n - 1) / 2;
      ASSERT_EQ(v.front(), want) << "k " << k;
      ASSERT_EQ(v.back(), want) << "k " << k;
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(errs[r], "") << "rank " << r;
}

TEST(AgreementTree, ARankThatDoesNotComeIsNamedAndTheTreeIsThenBroken) {
  // Rank 5 (under rank 1, at 7 ranks) skips the second call; its parent names it at the deadline,
  // and every other rank fails at once when the tree breaks, not at its own deadline.
  const int n = 7;
  std::vector<double> failed_after_ms(n, -1);
  auto errs = run_tree(n, Millis(10000), [&](int me, AgreementTree& t) {
    uint64_t v = 1;
    uint8_t scratch[16];
    t.allreduce(reinterpret_cast<uint8_t*>(&v), 8, scratch, add_words, in(Millis(10000)));
    if (me == 5) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      v = 1;  // its parent gave up and closed: EOF awaits it
      EXPECT_THROW(
          t.allreduce(reinterpret_cast<uint8_t*>(&v), 8, scratch, add_words, in(Millis(500))),
          NetworkError);
      return;
    }
    const auto start = SteadyClock::now();
    // Rank 1 waits 300 ms; the others would wait 5 s.
    const Millis wait = me == 1 ? Millis(300) : Millis(5000);
    try {
      t.allreduce(reinterpret_cast<uint8_t*>(&v), 8, scratch, add_words, in(wait));
    } catch (...) {
      failed_after_ms[me] =
          std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
      EXPECT_TRUE(t.broken());
      EXPECT_EQ(t.descriptors(), 0);
      throw;
    }
  });
  EXPECT_NE(errs[1].find("rank 1 waited"), std::string::npos) << errs[1];
  EXPECT_NE(errs[1].find("from rank 5"), std::string::npos) << errs[1];
  for (int r : {0, 2, 3, 4, 6}) {
    EXPECT_NE(errs[r].find("closed its connection"), std::string::npos) << r << ": " << errs[r];
    EXPECT_LT(failed_after_ms[r], 2000) << "rank " << r;
  }
}

TEST(AgreementTree, AChildThatIsLateNamesItsSubtree) {
  // Rank 2 (under rank 0; ranks 6, 7 under it) never calls: rank 0 names it and the ranks below.
  const int n = 8;
  auto errs = run_tree(n, Millis(10000), [&](int me, AgreementTree& t) {
    if (me == 2 || me == 6 || me == 7) {
      std::this_thread::sleep_for(std::chrono::milliseconds(600));
      return;
    }
    uint64_t v = 1;
    uint8_t scratch[16];
    t.allreduce(reinterpret_cast<uint8_t*>(&v), 8, scratch, add_words, in(Millis(300)));
  });
  EXPECT_NE(errs[0].find("from rank 2 (and ranks 6, 7 under it)"), std::string::npos) << errs[0];
}

TEST(AgreementTree, APeerThatLeavesIsNamed) {
  auto errs = run_tree(2, Millis(10000), [](int me, AgreementTree& t) {
    if (me == 1) {
      t.close();
      return;
    }
    uint64_t v = 1;
    uint8_t scratch[16];
    t.allreduce(reinterpret_cast<uint8_t*>(&v), 8, scratch, add_words, in(Millis(5000)));
  });
  EXPECT_NE(errs[0].find("rank 1 closed its connection to rank 0"), std::string::npos) << errs[0];
  EXPECT_EQ(errs[1], "");
}

TEST(AgreementTree, AStrangerWithoutTheTokenIsTurnedAway) {
  // Before rank 1 dials, a stranger connects to rank 0's published port claiming to be rank 1
  // with a wrong token; rank 0 drops it and keeps waiting for the real rank 1.
  auto store = std::make_shared<HashStore>(Millis(10000));
  auto errs = run_tree(
      2, Millis(10000),
      [](int, AgreementTree& t) {
        uint64_t v = 1;
        uint8_t scratch[16];
        t.allreduce(reinterpret_cast<uint8_t*>(&v), 8, scratch, add_words, in(Millis(5000)));
        EXPECT_EQ(v, 2u);
      },
      store,
      [&](int r) {
        if (r != 1) return;
        store->wait({"tree_test/0"}, Millis(10000));
        std::istringstream addr(to_string(store->get("tree_test/0")));
        std::string host, token;
        int port = 0;
        addr >> host >> port;
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(static_cast<uint16_t>(port));
        ::inet_pton(AF_INET, host.c_str(), &sa.sin_addr);
        ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
        std::vector<uint8_t> h = {'C', 'L', 'A', 'T', 1, 0, 0, 0};
        h.resize(h.size() + 64, 'x');
        ASSERT_EQ(::send(fd, h.data(), h.size(), 0), static_cast<ssize_t>(h.size()));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        ::close(fd);
      });
  EXPECT_EQ(errs[0], "");
  EXPECT_EQ(errs[1], "");
}

TEST(AgreementTree, ARankThatNeverConnectsIsNamedAtConnect) {
  auto store = std::make_shared<HashStore>(Millis(1000));
  try {
    AgreementTree::connect(store, "tree_test", 0, 2, "127.0.0.1", Millis(300));
    FAIL() << "connect returned without rank 1";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("heard nothing from rank 1"), std::string::npos)
        << e.what();
  }
}

TEST(AgreementTree, ShapeAndDepth) {
  EXPECT_EQ(AgreementTree::parent_of(1), 0);
  EXPECT_EQ(AgreementTree::parent_of(2), 0);
  EXPECT_EQ(AgreementTree::parent_of(3), 0);
  EXPECT_EQ(AgreementTree::parent_of(4), 1);
  EXPECT_EQ(AgreementTree::parent_of(7), 2);
  EXPECT_EQ(AgreementTree::below(2, 16), (std::vector<int>{6, 7, 14, 15}));
  EXPECT_EQ(AgreementTree::below(1, 12), (std::vector<int>{4, 5, 10, 11}));
  EXPECT_TRUE(AgreementTree::below(5, 12).empty());
  auto store = std::make_shared<HashStore>(Millis(1000));
  EXPECT_EQ(AgreementTree::connect(store, "t", 0, 1, "127.0.0.1", Millis(100))->depth(), 0);
}

}  // namespace
}  // namespace collie
