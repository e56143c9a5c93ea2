// DETAIL checks with ranks as threads over one HashStore (the wrappers' logic; the real
// multi-process scenarios are in tests/e2e/debug_*).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "core/error.h"
#include "debug/desync_checking_process_group.h"
#include "debug/fake_backend.h"

namespace collie {
namespace {

using testing::fake_info;
using testing::FakeBackend;

// Runs fn(rank, pg) on `n` threads; returns each rank's error text ("" = no error).
std::vector<std::string> run_ranks(int n, Millis timeout, uint64_t sample,
                                   const std::function<void(int, ProcessGroup&)>& fn) {
  auto store = std::make_shared<HashStore>(timeout);
  std::vector<std::string> errors(n);
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r) {
    ts.emplace_back([&, r] {
      auto pg = std::make_shared<DesyncCheckingProcessGroup>(
          std::make_shared<FakeBackend>(fake_info(r, n, store, timeout)), sample);
      try {
        fn(r, *pg);
      } catch (const DesyncError& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : ts) t.join();
  return errors;
}

TensorView view(std::vector<float>& v) {
  return TensorView::cpu(v.data(), v.size(), DType::Float32);
}

TEST(DesyncCheck, MatchingCollectivesPass) {
  auto errs = run_ranks(3, Millis(2000), 1, [](int, ProcessGroup& pg) {
    std::vector<float> a(16);
    for (int i = 0; i < 5; ++i) pg.all_reduce(view(a))->wait();
    BroadcastOptions bo;
    bo.root = 1;
    pg.broadcast(view(a), bo)->wait();
    pg.barrier()->wait();
  });
  for (const auto& e : errs) EXPECT_EQ(e, "");
}

TEST(DesyncCheck, OpMismatchRaisesOnEveryRankAndNothingRuns) {
  auto errs = run_ranks(3, Millis(2000), 1, [](int r, ProcessGroup& pg) {
    std::vector<float> a(1024);
    pg.all_reduce(view(a))->wait();
    if (r == 2) {
      pg.broadcast(view(a))->wait();
    } else {
      pg.all_reduce(view(a))->wait();
    }
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_NE(errs[r].find(fmt::format("[Rank {}] Detected mismatch between collectives on ranks: "
                                       "ranks 0, 1 called all_reduce #2 (float32[1024], sum); rank "
                                       "2 called broadcast #2 (float32[1024], root 0). Differs in: "
                                       "op type",
                                       r)),
              std::string::npos)
        << errs[r];
  }
}

TEST(DesyncCheck, MissingRankIsNamedWithinTheTimeout) {
  const auto start = std::chrono::steady_clock::now();
  auto errs = run_ranks(3, Millis(300), 1, [](int r, ProcessGroup& pg) {
    std::vector<float> a(4);
    pg.all_reduce(view(a))->wait();
    if (r != 1) pg.all_reduce(view(a))->wait();
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_NE(errs[0].find("rank 1 did not arrive within 300 ms"), std::string::npos) << errs[0];
  EXPECT_EQ(errs[1], "");
}

TEST(DesyncCheck, SamplingChecksEveryNthSeqOnly) {
  // seq 2 differs but is not sampled with N = 2 (seqs 1, 3, 5 are); seq 3 differs and is.
  auto errs = run_ranks(2, Millis(1000), 2, [](int r, ProcessGroup& pg) {
    std::vector<float> a(8), b(4);
    pg.all_reduce(view(a))->wait();
    pg.all_reduce(r == 0 ? view(a) : view(b))->wait();
    pg.all_reduce(r == 0 ? view(a) : view(b))->wait();
  });
  EXPECT_NE(errs[0].find("all_reduce #3"), std::string::npos) << errs[0];
  EXPECT_NE(errs[1].find("Differs in: element count"), std::string::npos) << errs[1];
}

TEST(DesyncCheck, SendRecvCheckedPairwiseWithoutDeadlock) {
  // Both ranks send first: legal with buffered sends, must not deadlock in the checker.
  auto errs = run_ranks(2, Millis(1000), 1, [](int r, ProcessGroup& pg) {
    std::vector<float> a(8), b(8);
    auto s = pg.send(view(a), 1 - r);
    auto q = pg.recv(view(b), 1 - r);
    s->wait();
    q->wait();
  });
  EXPECT_EQ(errs[0], "");
  EXPECT_EQ(errs[1], "");
}

TEST(DesyncCheck, SendRecvCountMismatchAndUnmatchedSend) {
  auto errs = run_ranks(2, Millis(500), 1, [](int r, ProcessGroup& pg) {
    std::vector<float> a(8), b(4);
    if (r == 0) {
      pg.send(view(a), 1)->wait();
    } else {
      pg.recv(view(b), 0)->wait();
    }
  });
  EXPECT_NE(errs[0].find("Detected mismatch between send and recv: rank 0 called send #1 to rank 1 "
                         "(float32[8], tag 0); rank 1 called recv #1 from rank 0 (float32[4], tag "
                         "0). Differs in: element count"),
            std::string::npos)
      << errs[0];
  EXPECT_NE(errs[1].find("Differs in: element count"), std::string::npos) << errs[1];
  errs = run_ranks(2, Millis(300), 1, [](int r, ProcessGroup& pg) {
    std::vector<float> a(8);
    if (r == 0) pg.send(view(a), 1)->wait();
  });
  EXPECT_NE(errs[0].find("rank 1 posted no matching recv within 300 ms"), std::string::npos)
      << errs[0];
}

}  // namespace
}  // namespace collie
