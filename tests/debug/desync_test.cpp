// DETAIL checks with ranks as threads over one HashStore (the wrappers' logic; the real
// multi-process scenarios are in tests/e2e/debug_*): the shared harness runs the test-only "fake"
// backend bare, and each rank puts a DesyncCheckingProcessGroup over it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <numeric>
#include <random>
#include <thread>

#include "comm/rendezvous.h"
#include "core/env.h"
#include "core/error.h"
#include "debug/desync_checking_process_group.h"
#include "debug/fingerprint_agreement.h"
#include "support/multiprocess.h"

namespace collie {
namespace {

// How the ranks agree: through the store, or over a real TCP agreement tree (threads).
enum class Via { Store, Tree };

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
        auto tree = via == Via::Tree ? make_agreement_tree(*backend, "desync_tree", Env::process())
                                     : nullptr;
        auto pg =
            std::make_shared<DesyncCheckingProcessGroup>(backend, sample, nullptr, std::move(tree));
        try {
          fn(ctx.rank, *pg);
        } catch (const DesyncError& e) {
          errors[ctx.rank] = e.what();
        }
        // As real ranks do before closing: nobody tears its tree down while a peer still
        // connects or reads from it.
        store_barrier(*store, "desync_test_exit", ctx.rank, n, Millis(10000));
      },
      opts);
  for (const auto& r : result.ranks) {
    if (r.status != testing::RankStatus::Passed) errors[r.rank] = "setup: " + r.message;
  }
  return errors;
}

void PrintTo(Via v, std::ostream* os) { *os << (v == Via::Store ? "store" : "tree"); }

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
  // Every rank fails, rank 2 too (its own pairs agree): nobody enters the all_to_all.
  for (int r : {0, 1, 2}) {
    EXPECT_NE(errs[r].find("Differs in: all_to_all splits (rank 0 sends 3 elements to rank 1, "
                           "which expects 2)"),
              std::string::npos)
        << "rank " << r << ": " << errs[r];
  }
}

INSTANTIATE_TEST_SUITE_P(Agreement, DesyncCheck, ::testing::Values(Via::Store, Via::Tree),
                         [](const auto& info) {
                           return info.param == Via::Store ? "Store" : "Tree";
                         });

// Each kind of mismatch, named by every rank, at 2, 7 and 64 ranks (threads) over the tree and
// at 2 and 7 through the store. The culprit is the last rank (at 64, five levels down the tree).
enum class Kind { Op, Dtype, Shape, Count, ReduceOp, Root, Splits, Missing };

struct KindCase {
  Via via;
  int n;
  Kind kind;
};

std::string kind_name(Kind k) {
  switch (k) {
    case Kind::Op:
      return "Op";
    case Kind::Dtype:
      return "Dtype";
    case Kind::Shape:
      return "Shape";
    case Kind::Count:
      return "Count";
    case Kind::ReduceOp:
      return "ReduceOp";
    case Kind::Root:
      return "Root";
    case Kind::Splits:
      return "Splits";
    case Kind::Missing:
      return "Missing";
  }
  return "";
}

void PrintTo(const KindCase& c, std::ostream* os) {
  *os << kind_name(c.kind) << " at " << c.n << " ranks via "
      << (c.via == Via::Store ? "store" : "tree");
}

class DesyncKind : public ::testing::TestWithParam<KindCase> {};

TEST_P(DesyncKind, IsNamedOnEveryRank) {
  // Plain copies, not a structured binding: clang 14 cannot capture bindings in lambdas.
  const Via via = GetParam().via;
  const int n = GetParam().n;
  const auto kind = GetParam().kind;
  const int culprit = n - 1;
  const std::string others = fmt::format("{} {}", n == 2 ? "rank" : "ranks", format_ranks([&] {
                                           std::vector<int> r(n - 1);
                                           std::iota(r.begin(), r.end(), 0);
                                           return r;
                                         }()));
  // A missing rank is named when the op times out: short, but at 64 threads on a loaded machine
  // the first op (which agrees) took longer than 300 ms, and was the one that timed out.
  const int missing_ms = n >= 64 ? 3000 : 300;
  auto errs = run_desync_checked(
      via, n, Millis(kind == Kind::Missing ? missing_ms : 10000), 1, [&](int r, ProcessGroup& pg) {
        std::vector<float> a(16);
        std::vector<double> d(16);
        const bool c = r == culprit;
        pg.all_reduce(view(a))->wait();  // one op that agrees first
        switch (kind) {
          case Kind::Op:
            c ? pg.broadcast(view(a))->wait() : pg.all_reduce(view(a))->wait();
            break;
          case Kind::Dtype:
            pg.all_reduce(c ? TensorView::cpu(d.data(), d.size(), DType::Float64) : view(a))
                ->wait();
            break;
          case Kind::Shape: {
            TensorView t = view(a);
            if (c) {
              t.shape.ndim = 2;
              t.shape.dims[0] = t.shape.dims[1] = 4;
            }
            pg.all_reduce(t)->wait();
            break;
          }
          case Kind::Count:
            pg.all_reduce(TensorView::cpu(a.data(), c ? 8 : 16, DType::Float32))->wait();
            break;
          case Kind::ReduceOp: {
            AllReduceOptions o;
            if (c) o.op = ReduceOp::Max;
            pg.all_reduce(view(a), o)->wait();
            break;
          }
          case Kind::Root: {
            BroadcastOptions o;
            o.root = c ? 1 : 0;
            pg.broadcast(view(a), o)->wait();
            break;
          }
          case Kind::Splits: {
            // One element to and from every rank, but the culprit sends 2 to rank 0, none to 1.
            std::vector<int64_t> in(n, 1), out(n, 1);
            if (c) {
              in[0] = 2;
              in[1] = 0;
            }
            std::vector<float> src(n), dst(n);
            AllToAllOptions o;
            o.input_splits = in;
            o.output_splits = out;
            pg.all_to_all(view(src), view(dst), o)->wait();
            break;
          }
          case Kind::Missing:
            if (!c) pg.all_reduce(view(a))->wait();
            break;
        }
      });
  std::string want;
  switch (kind) {
    case Kind::Op:
      want = fmt::format(
          "{} called all_reduce #2 (float32[16], sum); rank {} called broadcast #2 "
          "(float32[16], root 0). Differs in: op type",
          others, culprit);
      break;
    case Kind::Dtype:
      want = fmt::format("rank {} called all_reduce #2 (float64[16], sum). Differs in: dtype",
                         culprit);
      break;
    case Kind::Shape:
      want = fmt::format("rank {} called all_reduce #2 (float32[4, 4], sum). Differs in: shape",
                         culprit);
      break;
    case Kind::Count:
      want = fmt::format(
          "rank {} called all_reduce #2 (float32[8], sum). Differs in: element count", culprit);
      break;
    case Kind::ReduceOp:
      want = fmt::format("rank {} called all_reduce #2 (float32[16], max). Differs in: reduce op",
                         culprit);
      break;
    case Kind::Root:
      want = fmt::format("rank {} called broadcast #2 (float32[16], root 1). Differs in: root",
                         culprit);
      break;
    case Kind::Splits:
      want = fmt::format(
          "Differs in: all_to_all splits (rank {0} sends 2 elements to rank 0, which expects 1; "
          "rank {0} sends 0 elements to rank 1, which expects 1)",
          culprit);
      break;
    case Kind::Missing:
      want = fmt::format(
          "{} called all_reduce #2 (float32[16], sum); rank {} did not arrive "
          "within {} ms",
          others, culprit, missing_ms);
      break;
  }
  for (int r = 0; r < n; ++r) {
    if (kind == Kind::Missing && r == culprit) continue;
    EXPECT_NE(errs[r].find("Detected mismatch between collectives on ranks: "), std::string::npos)
        << "rank " << r << ": " << errs[r];
    EXPECT_NE(errs[r].find(want), std::string::npos) << "rank " << r << ": " << errs[r];
  }
}

std::vector<KindCase> kind_cases() {
  std::vector<KindCase> out;
  for (Kind k : {Kind::Op, Kind::Dtype, Kind::Shape, Kind::Count, Kind::ReduceOp, Kind::Root,
                 Kind::Splits, Kind::Missing}) {
    for (int n : {2, 7, 64}) out.push_back({Via::Tree, n, k});
    for (int n : {2, 7}) out.push_back({Via::Store, n, k});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Each, DesyncKind, ::testing::ValuesIn(kind_cases()), [](const auto& info) {
  return fmt::format("{}{}At{}", kind_name(info.param.kind),
                     info.param.via == Via::Store ? "Store" : "Tree", info.param.n);
});

TEST(DesyncAgreement, RanksArrivingInAnyOrderAgreeAndAMismatchIsStillNamed) {
  // 7 ranks, 30 checks, each rank arriving after its own random delay each time; the last check
  // differs on rank 3.
  const int n = 7;
  std::vector<std::vector<int>> delay_us(31, std::vector<int>(n));
  std::mt19937 rng(3);
  for (auto& d : delay_us) {
    for (int& x : d) x = static_cast<int>(rng() % 2000);
  }
  auto errs = run_desync_checked(Via::Tree, n, Millis(10000), 1, [&](int r, ProcessGroup& pg) {
    std::vector<float> a(16);
    for (int k = 0; k < 31; ++k) {
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us[k][r]));
      pg.all_reduce(TensorView::cpu(a.data(), k == 30 && r == 3 ? 4 : 16, DType::Float32))->wait();
    }
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_NE(errs[r].find("rank 3 called all_reduce #31 (float32[4], sum). Differs in: element "
                           "count"),
              std::string::npos)
        << "rank " << r << ": " << errs[r];
  }
}

TEST(DesyncAgreement, ARankThatLeavesMidAgreementIsNamed) {
  // Rank 5 (under rank 1) shuts its group down while the others wait in the second check: its
  // neighbours see the connection close, every rank that came asks the store, and rank 5 is
  // named within the timeout (plus the grace).
  const auto start = std::chrono::steady_clock::now();
  auto errs = run_desync_checked(Via::Tree, 7, Millis(500), 1, [](int r, ProcessGroup& pg) {
    std::vector<float> a(16);
    pg.all_reduce(view(a))->wait();
    if (r == 5) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      pg.shutdown();
      return;
    }
    pg.all_reduce(view(a))->wait();
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
  for (int r : {0, 1, 2, 3, 4, 6}) {
    EXPECT_NE(errs[r].find("ranks 0-4, 6 called all_reduce #2 (float32[16], sum); rank 5 did not "
                           "arrive within 500 ms"),
              std::string::npos)
        << "rank " << r << ": " << errs[r];
  }
}

}  // namespace
}  // namespace collie
