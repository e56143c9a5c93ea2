// Behaviour beyond the op matrix (tests/backends/conformance runs that): tag matching, all_to_all
// with splits, argument errors, a peer that dies, subgroups and shutdown.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <thread>

#include "backends/gloo/gloo_device.h"
#include "core/error.h"
#include "stack/init.h"
#include "store/store.h"
#include "support/multiprocess.h"

namespace collie::testing {
namespace {

TensorView i64(std::vector<int64_t>& v) {
  return TensorView::cpu(v.data(), v.size(), DType::Int64);
}

TEST(GlooP2P, TagsMatchRegardlessOfPostingOrder) {
  auto result = run_ranks(3, [](RankContext& ctx) {
    ProcessGroup& pg = *ctx.pg;
    const int w = ctx.world_size, me = ctx.rank;
    const int right = (me + 1) % w, left = (me + w - 1) % w;
    std::vector<int64_t> a(5, 100 + me), b(300, 200 + me), ra(5, -1), rb(300, -1);
    P2POptions t9, t5;
    t9.tag = 9;
    t5.tag = 5;
    // Sent tag 9 first, received tag 5 first: matching is by tag, not by order.
    auto s9 = pg.send(i64(b), right, t9);
    auto s5 = pg.send(i64(a), right, t5);
    auto r5 = pg.recv(i64(ra), left, t5);
    auto r9 = pg.recv(i64(rb), left, t9);
    r5->wait();
    r9->wait();
    s5->wait();
    s9->wait();
    check(ra[0] == 100 + left && ra[4] == 100 + left, "rank {}: tag 5 got {}", me, ra[0]);
    check(rb[0] == 200 + left && rb[299] == 200 + left, "rank {}: tag 9 got {}", me, rb[0]);
    check(pg.last_p2p_seq() == 4, "rank {}: p2p seq is {}", me, pg.last_p2p_seq());
  });
  EXPECT_TRUE(result.ok()) << result.summary();
}

TEST(GlooAllToAll, UnevenSplitsIncludingEmptyOnes) {
  auto result = run_ranks(4, [](RankContext& ctx) {
    const int w = ctx.world_size, me = ctx.rank;
    // Rank s sends (s + d) % 3 elements to rank d (some are 0); value s*1000 + d*100 + k.
    std::vector<int64_t> in_splits(w), out_splits(w);
    std::vector<int64_t> in, out;
    for (int d = 0; d < w; ++d) {
      in_splits[d] = (me + d) % 3;
      out_splits[d] = (d + me) % 3;
      for (int64_t k = 0; k < in_splits[d]; ++k) in.push_back(me * 1000 + d * 100 + k);
    }
    int64_t total = 0;
    for (int64_t s : out_splits) total += s;
    out.assign(total, -1);
    AllToAllOptions o;
    o.input_splits = in_splits;
    o.output_splits = out_splits;
    ctx.pg->all_to_all(i64(in), i64(out), o)->wait();
    size_t pos = 0;
    for (int s = 0; s < w; ++s) {
      for (int64_t k = 0; k < out_splits[s]; ++k, ++pos) {
        check(out[pos] == s * 1000 + me * 100 + k, "rank {}: from {} element {} is {}", me, s, k,
              out[pos]);
      }
    }
  });
  EXPECT_TRUE(result.ok()) << result.summary();
}

// In place (one buffer as input and output, as nccl-tests' in-place alltoall): Gloo would send
// blocks it already overwrote; the backend sends from a copy, so every block arrives intact. A
// block of 4000 elements spans several transport chunks, so a race would show.
TEST(GlooAllToAll, InPlaceOneBufferIsCorrect) {
  auto result = run_ranks(4, [](RankContext& ctx) {
    const int w = ctx.world_size, me = ctx.rank;
    constexpr int64_t kBlock = 4000;
    std::vector<int64_t> buf(kBlock * w);
    for (int d = 0; d < w; ++d)
      for (int64_t k = 0; k < kBlock; ++k) buf[d * kBlock + k] = me * 1000000 + d * 10000 + k;
    for (int round = 0; round < 3; ++round) {  // the scratch copy is reused across calls
      std::vector<int64_t> b = buf;
      ctx.pg->all_to_all(i64(b), i64(b))->wait();
      for (int s = 0; s < w; ++s) {
        for (int64_t k = 0; k < kBlock; k += 999) {
          check(b[s * kBlock + k] == s * 1000000 + me * 10000 + k,
                "rank {} round {}: from {} element {} is {}", me, round, s, k, b[s * kBlock + k]);
        }
      }
    }
  });
  EXPECT_TRUE(result.ok()) << result.summary();
}

TEST(GlooAsync, QueuedOpsRunInOrderAndInlineOpsWaitForThem) {
  auto result = run_ranks(3, [](RankContext& ctx) {
    ProcessGroup& pg = *ctx.pg;
    std::vector<std::vector<int64_t>> bufs(6, std::vector<int64_t>(50));
    std::vector<std::shared_ptr<Work>> works;
    AllReduceOptions async;
    async.async_op = true;
    for (size_t k = 0; k < bufs.size(); ++k) {
      for (auto& x : bufs[k]) x = static_cast<int64_t>(k * 10 + ctx.rank);
      works.push_back(pg.all_reduce(i64(bufs[k]), async));
    }
    // Inline op submitted behind the queue: must not overtake it.
    std::vector<int64_t> last(5, ctx.rank);
    pg.all_reduce(i64(last))->wait();
    check(works.back()->is_completed(), "rank {}: inline op overtook queued ones", ctx.rank);
    for (size_t k = works.size(); k-- > 0;) works[k]->wait();
    for (size_t k = 0; k < bufs.size(); ++k) {
      check(bufs[k][49] == static_cast<int64_t>(30 * k + 3), "rank {}: op {} got {}", ctx.rank, k,
            bufs[k][49]);
    }
    check(last[0] == 3, "rank {}: inline op got {}", ctx.rank, last[0]);
  });
  EXPECT_TRUE(result.ok()) << result.summary();
}

TEST(GlooErrors, BadRootIsInvalidArgumentAndSendsNothing) {
  auto result = run_ranks(2, [](RankContext& ctx) {
    ProcessGroup& pg = *ctx.pg;
    std::vector<int64_t> v(4, ctx.rank + 1);
    BroadcastOptions bad;
    bad.root = 5;
    bool threw = false;
    try {
      pg.broadcast(i64(v), bad);
    } catch (const InvalidArgument& e) {
      threw = std::string(e.what()).find("root 5") != std::string::npos;
    }
    check(threw, "rank {}: bad root did not throw InvalidArgument naming it", ctx.rank);
    check(pg.last_collective_seq() == 0, "rank {}: a rejected op used a seq", ctx.rank);
    // Had anything been sent, this all_reduce would receive it and be wrong or hang.
    pg.all_reduce(i64(v))->wait();
    check(v[0] == 3 && v[3] == 3, "rank {}: all_reduce after the error got {}", ctx.rank, v[0]);
  });
  EXPECT_TRUE(result.ok()) << result.summary();
}

TEST(GlooErrors, PeerThatDiesGivesNetworkOrTimeoutErrorNotAHang) {
  RunOptions opts;
  opts.group_timeout = Millis(20000);
  opts.deadline = Millis(60000);
  auto result = run_ranks(
      3,
      [](RankContext& ctx) {
        ProcessGroup& pg = *ctx.pg;
        pg.barrier()->wait();
        if (ctx.rank == 2) ctx.die();
        std::vector<float> v(100000, 1.0f);
        AllReduceOptions o;
        o.timeout = Millis(3000);
        const auto start = std::chrono::steady_clock::now();
        std::string got = "no error";
        try {
          pg.all_reduce(TensorView::cpu(v.data(), v.size(), DType::Float32), o)->wait();
        } catch (const NetworkError& e) {
          got = std::string("NetworkError: ") + e.what();
        } catch (const TimeoutError& e) {
          got = std::string("TimeoutError: ") + e.what();
        } catch (const std::exception& e) {
          got = std::string("other: ") + e.what();
        }
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - start)
                            .count();
        check(got.rfind("NetworkError", 0) == 0 || got.rfind("TimeoutError", 0) == 0,
              "rank {}: expected NetworkError/TimeoutError, got {}", ctx.rank, got);
        check(got.find("all_reduce #2") != std::string::npos &&
                  got.find(fmt::format("[Rank {}]", ctx.rank)) != std::string::npos,
              "rank {}: message lacks rank/op/seq: {}", ctx.rank, got);
        check(ms < 10000, "rank {}: took {} ms to fail", ctx.rank, ms);
        // The group is now unusable and says so at once.
        bool fast_fail = false;
        try {
          pg.barrier()->wait();
        } catch (const Error& e) {
          fast_fail = true;
        }
        check(fast_fail, "rank {}: op after a lost peer did not fail", ctx.rank);
      },
      opts);
  ASSERT_EQ(result.ranks.size(), 3u);
  EXPECT_EQ(result.ranks[0].status, RankStatus::Passed) << result.summary();
  EXPECT_EQ(result.ranks[1].status, RankStatus::Passed) << result.summary();
  EXPECT_EQ(result.ranks[2].status, RankStatus::Died) << result.summary();
}

// Runs body in a forked child; its exit code (0 = body returned true), or 100 + the signal that
// killed it.
int in_child(const std::function<bool()>& body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body() ? 0 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

// SIGPIPE's disposition after creating a Gloo device from a process that had `handler`.
void (*sigpipe_after_device(void (*handler)(int)))(int) {
  std::signal(SIGPIPE, handler);
  auto device = create_gloo_device(BindChoice{"127.0.0.1", "lo", "test"}, 0);
  struct sigaction now {};
  sigaction(SIGPIPE, nullptr, &now);
  return now.sa_handler;
}

// A lost peer must surface as NetworkError (PeerThatDies... above), not kill the survivor:
// libgloo's writev raises SIGPIPE, so the Gloo device ignores it unless the program handles it.
TEST(GlooErrors, SigpipeIsIgnoredUnlessTheProgramHandlesIt) {
  EXPECT_EQ(in_child([] {
              if (sigpipe_after_device(SIG_DFL) != SIG_IGN) return false;
              int sv[2];
              if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return false;
              close(sv[1]);
              const char c = 'x';
              return write(sv[0], &c, 1) < 0 && errno == EPIPE;  // alive, with an error
            }),
            0);
  static void (*const handler)(int) = +[](int) {};
  EXPECT_EQ(in_child([] { return sigpipe_after_device(handler) == handler; }), 0);
}

TEST(GlooErrors, PerOpTimeoutBecomesTimeoutErrorForCollectivesAndRecv) {
  auto result = run_ranks(2, [](RankContext& ctx) {
    ProcessGroup& pg = *ctx.pg;
    if (ctx.rank == 1) {
      // Alive but never joins: rank 0's ops must time out on their own deadline.
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      return;
    }
    std::vector<int64_t> v(10, 1);
    P2POptions po;
    po.timeout = Millis(400);
    const auto start = std::chrono::steady_clock::now();
    std::string got;
    auto w = pg.recv(i64(v), 1, po);
    try {
      w->wait();
    } catch (const TimeoutError& e) {
      got = e.what();
    }
    check(!got.empty(), "recv from a silent peer did not time out");
    // wait() and the backend share the deadline; the backend's own error (with the peer) is
    // the Work's outcome once it has recorded it.
    got.clear();
    try {
      w->wait(Millis(1000));
    } catch (const TimeoutError& e) {
      got = e.what();
    }
    check(got.find("[Rank 0] gloo recv #1 with peer 1") != std::string::npos,
          "recv timeout message: '{}'", got);
    got.clear();
    AllReduceOptions o;
    o.timeout = Millis(400);
    try {
      pg.all_reduce(i64(v), o)->wait();
    } catch (const Error& e) {
      got = e.what();  // the timed-out recv already broke the group; that must be reported
    }
    check(!got.empty(), "all_reduce after a timeout did not fail");
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    check(ms < 2000, "timeouts took {} ms in total", ms);
  });
  EXPECT_TRUE(result.ok()) << result.summary();
}

TEST(GlooCollectivesLarge, MultiSegmentAllReduceAndReduceScatter) {
  auto result = run_ranks(3, [](RankContext& ctx) {
    // Several of Gloo's 1 MiB segments, with collie's reduction function in every one.
    const size_t n = 3 * 400000;
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i + ctx.rank) % 17);
    std::vector<float> in = v, out(n / 3);
    ctx.pg->all_reduce(TensorView::cpu(v.data(), n, DType::Float32))->wait();
    ReduceScatterOptions o;
    o.op = ReduceOp::Max;
    ctx.pg
        ->reduce_scatter(TensorView::cpu(in.data(), n, DType::Float32),
                         TensorView::cpu(out.data(), n / 3, DType::Float32), o)
        ->wait();
    for (size_t i = 0; i < n; i += 997) {
      float want = 0;
      for (int r = 0; r < 3; ++r) want += static_cast<float>((i + r) % 17);
      check(v[i] == want, "rank {}: all_reduce element {} is {}, expected {}", ctx.rank, i, v[i],
            want);
    }
    for (size_t i = 0; i < n / 3; i += 101) {
      const size_t g = ctx.rank * (n / 3) + i;
      float want = 0;
      for (int r = 0; r < 3; ++r) want = std::max(want, static_cast<float>((g + r) % 17));
      check(out[i] == want, "rank {}: reduce_scatter element {} is {}, expected {}", ctx.rank, i,
            out[i], want);
    }
  });
  EXPECT_TRUE(result.ok()) << result.summary();
}

TEST(GlooHarness, ReportsHungRanksByName) {
  RunOptions opts;
  // Threads cannot be killed, so the group timeout (4 s) lets rank 0 out within the harness's
  // grace period in thread mode; processes are killed at the deadline.
  opts.deadline = Millis(2000);
  opts.group_timeout = Millis(4000);
  auto result = run_ranks(
      2,
      [](RankContext& ctx) {
        // Rank 1 never joins the barrier; rank 0 waits longer than the harness deadline.
        if (ctx.rank == 0) ctx.pg->barrier()->wait();
        if (ctx.rank == 1) std::this_thread::sleep_for(std::chrono::seconds(3));
      },
      opts);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.ranks[0].status, RankStatus::Hung) << result.summary();
  EXPECT_NE(result.summary().find("HUNG"), std::string::npos) << result.summary();
}

TEST(GlooHarness, PassesEnvironmentToRanks) {
  RunOptions opts;
  opts.env["COLLIE_TEST_MARKER"] = "42";
  auto result = run_ranks(
      2,
      [](RankContext& ctx) {
        const char* v = std::getenv("COLLIE_TEST_MARKER");
        check(v && std::string(v) == "42", "rank {}: COLLIE_TEST_MARKER is {}", ctx.rank,
              v ? v : "unset");
      },
      opts);
  EXPECT_TRUE(result.ok()) << result.summary();
  EXPECT_EQ(std::getenv("COLLIE_TEST_MARKER"), nullptr);
}

TEST(GlooShutdown, LaterOpsFailAndShutdownIsIdempotent) {
  auto result = run_ranks(2, [](RankContext& ctx) {
    ProcessGroup& pg = *ctx.pg;
    pg.barrier()->wait();
    std::vector<int64_t> v(3, 1);
    Store& store = *pg.info().store;
    if (ctx.rank == 0) {
      // A recv nobody will match, pending when the group shuts down: it fails, naming itself.
      P2POptions o;
      o.tag = 77;
      auto pending = pg.recv(i64(v), 1, o);
      pg.shutdown();
      std::string got;
      try {
        pending->wait(Millis(5000));
      } catch (const BackendError& e) {
        got = e.what();
      }
      check(got.find("recv #1 with peer 1") != std::string::npos &&
                got.find("shut down") != std::string::npos,
            "pending recv after shutdown: '{}'", got);
      store.set("shutdown_test/rank0_done", "1");
    } else {
      store.wait({"shutdown_test/rank0_done"});  // keep the peer's sockets open meanwhile
    }
    pg.shutdown();
    pg.shutdown();
    bool failed = false;
    try {
      pg.all_reduce(i64(v))->wait();
    } catch (const BackendError& e) {
      failed = std::string(e.what()).find("shut down") != std::string::npos;
    }
    check(failed, "rank {}: op after shutdown did not fail with BackendError", ctx.rank);
  });
  EXPECT_TRUE(result.ok()) << result.summary();
}

TEST(GlooSubgroup, NewGroupOfOddRanks) {
  auto result = run_ranks(4, [](RankContext& ctx) {
    auto sub = new_group(*ctx.pg, {1, 3});
    check((sub != nullptr) == (ctx.rank % 2 == 1), "rank {}: membership wrong", ctx.rank);
    if (sub) {
      std::vector<int64_t> v(7, ctx.rank);
      sub->all_reduce(i64(v))->wait();
      check(v[6] == 4, "rank {}: subgroup sum is {}", ctx.rank, v[6]);
      check(sub->size() == 2 && sub->rank() == ctx.rank / 2, "rank {}: sub rank {}", ctx.rank,
            sub->rank());
    }
    ctx.pg->barrier()->wait();
  });
  EXPECT_TRUE(result.ok()) << result.summary();
}

}  // namespace
}  // namespace collie::testing
