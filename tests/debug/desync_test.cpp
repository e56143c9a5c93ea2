// DETAIL checks with ranks as threads over one HashStore (the wrappers' logic; the real
// multi-process scenarios are in tests/e2e/debug_*): the shared harness runs the test-only "fake"
// backend bare, and each rank puts a DesyncCheckingProcessGroup over it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>

#include "comm/rendezvous.h"
#include "core/env.h"
#include "core/error.h"
#include "debug/desync_checking_process_group.h"
#include "debug/fingerprint_exchange.h"
#include "debug/record_mesh.h"
#include "support/multiprocess.h"

namespace collie {
namespace {

// How the collectives' fingerprints travel: the store, or a real TCP record mesh (threads).
enum class Via { Store, Mesh };

// Runs fn(rank, pg) on `n` thread ranks, pg a DesyncCheckingProcessGroup over the fake backend
// checking every `sample`-th seq; returns each rank's DesyncError text ("" = none, "setup: ..."
// for any other failure).
std::vector<std::string> run_desync_checked(Via via, int n, Millis timeout, uint64_t sample,
                                            const std::function<void(int, ProcessGroup&)>& fn) {
  std::vector<std::string> errors(n);
  const testing::RunOptions opts{
      .backend = "fake", .mode = testing::Mode::Threads, .group_timeout = timeout, .stack = false};
  const auto result = testing::run_ranks(
      n,
      [&](testing::RankContext& ctx) {
        const std::shared_ptr<ProcessGroup>& backend = ctx.pg;
        const std::shared_ptr<Store>& store = backend->info().store;
        auto exchange =
            via == Via::Mesh
                ? make_mesh_exchange(make_fingerprint_mesh(*backend, "desync_mesh", Env::process()),
                                     store)
                : nullptr;
        auto pg = std::make_shared<DesyncCheckingProcessGroup>(backend, sample, nullptr,
                                                               std::move(exchange));
        try {
          fn(ctx.rank, *pg);
        } catch (const DesyncError& e) {
          errors[ctx.rank] = e.what();
        }
        // As real ranks do before closing: nobody tears its mesh down while a peer still
        // connects or reads from it.
        store_barrier(*store, "desync_test_exit", ctx.rank, n, Millis(10000));
      },
      opts);
  for (const auto& r : result.ranks) {
    if (r.status != testing::RankStatus::Passed) errors[r.rank] = "setup: " + r.message;
  }
  return errors;
}

void PrintTo(Via v, std::ostream* os) { *os << (v == Via::Store ? "store" : "mesh"); }

class DesyncCheck : public ::testing::TestWithParam<Via> {};

TensorView view(std::vector<float>& v) {
  return TensorView::cpu(v.data(), v.size(), DType::Float32);
}

TEST_P(DesyncCheck, MatchingCollectivesPass) {
  auto errs = run_desync_checked(GetParam(), 3, Millis(2000), 1, [](int, ProcessGroup& pg) {
    std::vector<float> a(16);
    for (int i = 0; i < 5; ++i) pg.all_reduce(view(a))->wait();
    BroadcastOptions bo;
    bo.root = 1;
    pg.broadcast(view(a), bo)->wait();
    pg.barrier()->wait();
  });
  for (const auto& e : errs) EXPECT_EQ(e, "");
}

TEST_P(DesyncCheck, OpMismatchRaisesOnEveryRankAndNothingRuns) {
  auto errs = run_desync_checked(GetParam(), 3, Millis(2000), 1, [](int r, ProcessGroup& pg) {
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

TEST_P(DesyncCheck, MissingRankIsNamedWithinTheTimeout) {
  const auto start = std::chrono::steady_clock::now();
  auto errs = run_desync_checked(GetParam(), 3, Millis(300), 1, [](int r, ProcessGroup& pg) {
    std::vector<float> a(4);
    pg.all_reduce(view(a))->wait();
    if (r != 1) pg.all_reduce(view(a))->wait();
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_NE(errs[0].find("rank 1 did not arrive within 300 ms"), std::string::npos) << errs[0];
  EXPECT_EQ(errs[1], "");
}

TEST_P(DesyncCheck, SamplingChecksEveryNthSeqOnly) {
  // seq 2 differs but is not sampled with N = 2 (seqs 1, 3, 5 are); seq 3 differs and is.
  auto errs = run_desync_checked(GetParam(), 2, Millis(1000), 2, [](int r, ProcessGroup& pg) {
    std::vector<float> a(8), b(4);
    pg.all_reduce(view(a))->wait();
    pg.all_reduce(r == 0 ? view(a) : view(b))->wait();
    pg.all_reduce(r == 0 ? view(a) : view(b))->wait();
  });
  EXPECT_NE(errs[0].find("all_reduce #3"), std::string::npos) << errs[0];
  EXPECT_NE(errs[1].find("Differs in: element count"), std::string::npos) << errs[1];
}

TEST_P(DesyncCheck, SendRecvCheckedPairwiseWithoutDeadlock) {
  // Both ranks send first: legal with buffered sends, must not deadlock in the checker.
  auto errs = run_desync_checked(GetParam(), 2, Millis(1000), 1, [](int r, ProcessGroup& pg) {
    std::vector<float> a(8), b(8);
    auto s = pg.send(view(a), 1 - r);
    auto q = pg.recv(view(b), 1 - r);
    s->wait();
    q->wait();
  });
  EXPECT_EQ(errs[0], "");
  EXPECT_EQ(errs[1], "");
}

TEST_P(DesyncCheck, SendRecvCountMismatchAndUnmatchedSend) {
  auto errs = run_desync_checked(GetParam(), 2, Millis(500), 1, [](int r, ProcessGroup& pg) {
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
  errs = run_desync_checked(GetParam(), 2, Millis(300), 1, [](int r, ProcessGroup& pg) {
    std::vector<float> a(8);
    if (r == 0) pg.send(view(a), 1)->wait();
  });
  EXPECT_NE(errs[0].find("rank 1 posted no matching recv within 300 ms"), std::string::npos)
      << errs[0];
}

TEST_P(DesyncCheck, AllToAllSplitsMismatchNamesThePairOnBothOfItsRanks) {
  // Rank 0 sends 3 elements to rank 1, which expects 2; every other pair agrees.
  auto errs = run_desync_checked(GetParam(), 3, Millis(2000), 1, [](int r, ProcessGroup& pg) {
    std::vector<int64_t> in_splits = {2, 2, 2}, out_splits = {2, 2, 2};
    if (r == 0) in_splits = {2, 3, 1};
    if (r == 2) out_splits = {1, 2, 2};
    std::vector<float> in(6), out(r == 2 ? 5 : 6);
    AllToAllOptions o;
    o.input_splits = in_splits;
    o.output_splits = out_splits;
    pg.all_to_all(view(in), view(out), o)->wait();
  });
  for (int r : {0, 1}) {
    EXPECT_NE(errs[r].find("Differs in: all_to_all splits (rank 0 sends 3 elements to rank 1, "
                           "which expects 2)"),
              std::string::npos)
        << "rank " << r << ": " << errs[r];
  }
  // The store shows rank 2 every pair; the mesh only its own pairs, which agree.
  if (GetParam() == Via::Store) {
    EXPECT_NE(errs[2], "");
  } else {
    EXPECT_EQ(errs[2], "");
  }
}

INSTANTIATE_TEST_SUITE_P(Exchange, DesyncCheck, ::testing::Values(Via::Store, Via::Mesh),
                         [](const auto& info) {
                           return info.param == Via::Store ? "Store" : "Mesh";
                         });

}  // namespace
}  // namespace collie
