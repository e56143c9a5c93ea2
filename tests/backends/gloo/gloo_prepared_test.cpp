// libgloo options and unbound buffers reused across calls (backends/gloo/gloo_prepared.h, the
// UnboundBufferPool in gloo_p2p.h): the cache's bounds, and that reuse never reads stale
// arguments: every op run twice on the same buffers with new contents, more distinct buffers than
// the cache holds, memory freed and allocated again at the same address, the same send buffer in
// two sends at once.
#include "backends/gloo/gloo_prepared.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "stack/init.h"
#include "support/multiprocess.h"

namespace collie::testing {
namespace {

struct CountingOp : PreparedOp {
  explicit CountingOp(int* alive) : alive_(alive) { ++*alive_; }
  ~CountingOp() override { --*alive_; }
  void run(uint32_t, std::chrono::milliseconds) override {}
  int* alive_;
};

GlooOpKey key_at(uintptr_t address) {
  GlooOpKey k;
  k.type = OpType::AllReduce;
  k.in = reinterpret_cast<const void*>(address);
  k.in_bytes = 64;
  return k;
}

TEST(GlooPreparedOps, BuildsOncePerKeyAndKeepsTheMostRecentlyUsed) {
  int alive = 0, builds = 0;
  PreparedOps ops;
  auto get = [&](uintptr_t a) -> PreparedOp& {
    return ops.get(key_at(a), [&] {
      ++builds;
      return std::make_unique<CountingOp>(&alive);
    });
  };
  PreparedOp& first = get(1);
  EXPECT_EQ(&get(1), &first);
  EXPECT_EQ(builds, 1);
  GlooOpKey other = key_at(1);
  other.reduce_op = ReduceOp::Max;  // any field that shapes the options makes a new entry
  ops.get(std::move(other), [&] {
    ++builds;
    return std::make_unique<CountingOp>(&alive);
  });
  EXPECT_EQ(builds, 2);
  for (uintptr_t a = 2; a < 2 + 2 * PreparedOps::kCapacity; ++a) {
    get(a);
    get(1);  // key 1 stays the most recently used, so it is never the one evicted
  }
  EXPECT_EQ(builds, 2 + 2 * static_cast<int>(PreparedOps::kCapacity)) << "key 1 was built again";
  EXPECT_EQ(ops.size(), PreparedOps::kCapacity);
  EXPECT_EQ(alive, static_cast<int>(PreparedOps::kCapacity));
  const int before = builds;
  get(1);
  EXPECT_EQ(builds, before) << "the most recently used entry was evicted";
  get(2);
  EXPECT_EQ(builds, before + 1) << "the least recently used entry was kept";
  ops.clear();
  EXPECT_EQ(alive, 0);
  EXPECT_EQ(ops.size(), 0u);
}

TensorView i64(std::vector<int64_t>& v) {
  return TensorView::cpu(v.data(), v.size(), DType::Int64);
}

// Every collective twice on the same buffers, with different contents and roots the second
// time: a reused entry must read the caller's memory as it is now.
TEST(GlooPrepared, EveryOpReusedOnTheSameBuffersSeesTheNewContents) {
  auto result = run_ranks(3, [](RankContext& ctx) {
    ProcessGroup& pg = *ctx.pg;
    const int w = ctx.world_size, me = ctx.rank;
    constexpr int64_t n = 6;
    std::vector<int64_t> one(n), all(n * w), out(n * w), part(n);
    for (int64_t round = 1; round <= 2; ++round) {
      const int64_t base = 1000 * round;
      const int root = static_cast<int>(round) % w;
      std::fill(one.begin(), one.end(), base + me);
      pg.all_reduce(i64(one))->wait();
      check(one[n - 1] == w * base + w * (w - 1) / 2, "rank {} round {}: all_reduce {}", me, round,
            one[n - 1]);
      std::fill(one.begin(), one.end(), base + me);
      BroadcastOptions bo;
      bo.root = root;
      pg.broadcast(i64(one), bo)->wait();
      check(one[0] == base + root, "rank {} round {}: broadcast {}", me, round, one[0]);
      std::fill(one.begin(), one.end(), base + me);
      ReduceOptions ro;
      ro.root = root;
      ro.op = ReduceOp::Max;
      pg.reduce(i64(one), ro)->wait();
      if (me == root)
        check(one[0] == base + w - 1, "rank {} round {}: reduce {}", me, round, one[0]);
      std::fill(part.begin(), part.end(), base + me);
      pg.all_gather(i64(part), i64(all))->wait();
      for (int r = 0; r < w; ++r)
        check(all[r * n] == base + r, "rank {} round {}: all_gather from {}", me, round, r);
      std::fill(out.begin(), out.end(), -1);
      GatherOptions go;
      go.root = root;
      pg.gather(i64(part), i64(out), go)->wait();
      if (me == root) {
        for (int r = 0; r < w; ++r)
          check(out[r * n] == base + r, "rank {} round {}: gather from {}", me, round, r);
      }
      for (int r = 0; r < w; ++r)
        std::fill(all.begin() + r * n, all.begin() + (r + 1) * n, base + r);
      ScatterOptions so;
      so.root = root;
      pg.scatter(i64(all), i64(part), so)->wait();
      check(part[0] == base + me, "rank {} round {}: scatter {}", me, round, part[0]);
      for (int r = 0; r < w; ++r)
        std::fill(all.begin() + r * n, all.begin() + (r + 1) * n, base + 10 * me + r);
      pg.reduce_scatter(i64(all), i64(part))->wait();
      check(part[0] == w * base + 10 * (w * (w - 1) / 2) + w * me, "rank {} round {}: rs {}", me,
            round, part[0]);
      for (int r = 0; r < w; ++r)
        std::fill(all.begin() + r * n, all.begin() + (r + 1) * n, base + 10 * me + r);
      pg.all_to_all(i64(all), i64(out))->wait();
      for (int r = 0; r < w; ++r)
        check(out[r * n] == base + 10 * r + me, "rank {} round {}: all_to_all from {}", me, round,
              r);
      pg.barrier()->wait();
    }
  });
  EXPECT_TRUE(result.ok()) << result.summary();
}

// More distinct buffers than the cache holds (entries are evicted and built again), then the
// same sizes allocated again after a free (often at the same address, with other contents).
TEST(GlooPrepared, ManyBuffersAndReallocatedMemoryStayCorrect) {
  auto result = run_ranks(2, [](RankContext& ctx) {
    const int me = ctx.rank;
    const size_t nbuf = PreparedOps::kCapacity + 36;
    for (int pass = 0; pass < 3; ++pass) {
      std::vector<std::unique_ptr<std::vector<int64_t>>> bufs;
      for (size_t b = 0; b < nbuf; ++b)
        bufs.push_back(std::make_unique<std::vector<int64_t>>(8 + b % 5, pass * 100 + b + me));
      for (size_t b = 0; b < nbuf; ++b) {
        ctx.pg->all_reduce(i64(*bufs[b]))->wait();
        const int64_t want = 2 * (pass * 100 + static_cast<int64_t>(b)) + 1;
        check((*bufs[b])[0] == want && bufs[b]->back() == want, "rank {} pass {} buffer {}: {}", me,
              pass, b, (*bufs[b])[0]);
      }
    }
  });
  EXPECT_TRUE(result.ok()) << result.summary();
}

// send/recv reuse pooled unbound buffers: one buffer sent to two peers at once (two buffers
// over the same memory), a ping-pong whose contents change every time, and two buffers of the
// same size taking turns (a pooled buffer must match the address, not only the size).
TEST(GlooPrepared, PooledSendRecvBuffersCarryTheCurrentContents) {
  auto result = run_ranks(3, [](RankContext& ctx) {
    ProcessGroup& pg = *ctx.pg;
    const int me = ctx.rank;
    std::vector<int64_t> even(100), odd(100);
    for (int round = 0; round < 50; ++round) {
      std::vector<int64_t>& buf = round % 2 ? odd : even;
      if (me == 0) {
        std::fill(buf.begin(), buf.end(), round);
        auto a = pg.send(i64(buf), 1);
        auto b = pg.send(i64(buf), 2);
        a->wait();
        b->wait();
        pg.recv(i64(buf), 1)->wait();
        check(buf[99] == round + 1000, "round {}: rank 0 got {} back", round, buf[99]);
      } else {
        std::fill(buf.begin(), buf.end(), -1);
        pg.recv(i64(buf), 0)->wait();
        check(buf[0] == round && buf[99] == round, "rank {} round {}: got {}", me, round, buf[0]);
        if (me == 1) {
          std::fill(buf.begin(), buf.end(), round + 1000);
          pg.send(i64(buf), 0)->wait();
        }
      }
    }
  });
  EXPECT_TRUE(result.ok()) << result.summary();
}

// A group shut down the moment its last send/recv completed, many times: the waiter that
// returned the op's buffer to the pool must not be seen (buffer gone) by shutdown's abort of the
// waits still in progress (it was: SIGSEGV in P2PWaiterPool::stop in probe connectivity).
TEST(GlooPrepared, ShutdownRightAfterSendRecvCompletes) {
  auto result = run_ranks(2, [](RankContext& ctx) {
    for (int round = 0; round < 20; ++round) {
      auto sub = new_group(*ctx.pg, {0, 1});
      std::vector<int64_t> v(16, ctx.rank);
      if (ctx.rank == 0) {
        sub->send(i64(v), 1)->wait();
      } else {
        sub->recv(i64(v), 0)->wait();
      }
      sub->shutdown();
    }
    ctx.pg->barrier()->wait();
  });
  EXPECT_TRUE(result.ok()) << result.summary();
}

}  // namespace
}  // namespace collie::testing
