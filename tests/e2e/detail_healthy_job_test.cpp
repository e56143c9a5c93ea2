// A healthy job under COLLIE_DEBUG=DETAIL must run to the end: 3 real Gloo processes over
// loopback mix checked collectives with a ring of checked send/recv for many rounds. Regression
// test: the p2p checker used to park its store waits on the caller's TcpStore connection, so a
// rank's next check could sit behind a wait for a key its peer could only set after its own
// check, and the ring stalled until the timeout reported an "unmatched send".
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>

#include "support/multiprocess.h"

namespace collie {
namespace {

TensorView view(std::vector<float>& v) {
  return TensorView::cpu(v.data(), v.size(), DType::Float32);
}

TEST(DetailHealthyJob, CollectivesAndAP2PRingRunToTheEnd) {
  constexpr int kWorld = 3, kRounds = 150;
  testing::RunOptions o;
  o.mode = testing::Mode::Processes;
  o.group_timeout = Millis(10000);
  o.deadline = Millis(90000);
  o.env = {{"COLLIE_DEBUG", "DETAIL"}};
  const auto start = std::chrono::steady_clock::now();
  auto r = testing::run_ranks(
      kWorld,
      [](testing::RankContext& ctx) {
        ProcessGroup& pg = *ctx.pg;
        const int me = ctx.rank, next = (me + 1) % kWorld, prev = (me + kWorld - 1) % kWorld;
        for (int round = 0; round < kRounds; ++round) {
          std::vector<float> a(16, float(me + round));
          pg.all_reduce(view(a))->wait();
          testing::check(a[0] == float(3 * round + 3), "round {}: all_reduce gave {}", round, a[0]);
          const int root = round % kWorld;
          std::vector<float> b(8, float(me == root ? round : -1));
          BroadcastOptions bo;
          bo.root = root;
          pg.broadcast(view(b), bo)->wait();
          testing::check(b[7] == float(round), "round {}: broadcast gave {}", round, b[7]);
          std::vector<float> mine(4, float(me)), all(4 * kWorld, -1.0f);
          pg.all_gather(view(mine), view(all))->wait();
          testing::check(all[4 * 2] == 2.0f, "round {}: all_gather gave {}", round, all[8]);
          std::vector<float> out(32, float(me * 1000 + round)), in(32, -1.0f);
          auto s = pg.send(view(out), next);
          auto v = pg.recv(view(in), prev);
          s->wait();
          v->wait();
          testing::check(in[31] == float(prev * 1000 + round), "round {}: recv from {} gave {}",
                         round, prev, in[31]);
        }
      },
      o);
  const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r.ok()) << r.summary();
  std::printf("%d rounds of 3 collectives + a send/recv ring under DETAIL: %.1f s\n", kRounds,
              secs);
}

}  // namespace
}  // namespace collie
