// /v1/stacks interrupts every thread of a rank with a signal. Real processes: 3 gloo ranks run
// collectives, send/recv and TcpStore calls (rank 0 serves the store) with exact data checks for
// a few seconds while a thread in each rank hammers its own /v1/stacks (and bad requests); every
// check must pass and no call may fail with EINTR or a timeout, not even a plain blocking read() of
// application code.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "debug_server/auto_start.h"
#include "debug_server/server.h"
#include "store/store.h"
#include "support/multiprocess.h"

namespace collie {
namespace {

using namespace std::chrono_literals;

TEST(StacksUnderLoad, CollectivesKeepPassingWhileStacksAreHammered) {
  testing::RunOptions o;
  o.mode = testing::Mode::Processes;
  o.deadline = Millis(60000);
  o.group_timeout = Millis(10000);
  o.env = {{"COLLIE_DEBUG_PORT", "0"}};
  auto result = testing::run_ranks(
      3,
      [](testing::RankContext& ctx) {
        DebugServer* s = process_debug_server();
        testing::check(s != nullptr, "rank {}: no debug server", ctx.rank);
        std::atomic<bool> stop{false};
        std::atomic<int> captures{0}, bad{0}, user_reads{0}, user_eintr{0};
        // Application code in the rank doing a plain blocking read() (a pipe fed every 2 ms): the
        // stack signal must not make it fail with EINTR (the handler is SA_RESTART).
        int fds[2];
        testing::check(pipe(fds) == 0, "pipe");
        std::thread user_reader([&] {
          char c;
          for (;;) {
            const ssize_t r = read(fds[0], &c, 1);
            if (r == 1 && c == 'q') return;
            if (r == 1) ++user_reads;
            if (r < 0 && errno == EINTR) ++user_eintr;
          }
        });
        std::thread user_writer([&] {
          while (!stop.load()) {
            [[maybe_unused]] ssize_t w = write(fds[1], "x", 1);
            std::this_thread::sleep_for(2ms);
          }
          [[maybe_unused]] ssize_t w = write(fds[1], "q", 1);
        });
        std::thread hammer([&] {
          httplib::Client cli("127.0.0.1", s->port());
          cli.set_read_timeout(10, 0);
          while (!stop.load()) {
            auto r = cli.Get("/v1/stacks?max_frames=8");
            if (r && r->status == 200 && nlohmann::json::parse(r->body)["threads"].size() >= 3) {
              ++captures;
            } else {
              ++bad;
            }
            // Bad requests in between: answered 4xx, never in the collectives' way.
            auto nf = cli.Get("/v1/nope");
            auto bq = cli.Get("/v1/cluster/status?timeout_ms=abc");
            if (!nf || nf->status != 404 || !bq || bq->status != 400) ++bad;
          }
        });
        const int n = ctx.world_size, me = ctx.rank;
        // Every rank runs at least 3 s and 20 rounds and until its hammer has had 10 good
        // captures; a loaded machine gets more rounds, not a failure. Past the cap a rank stops
        // waiting for captures and the check below says how many it had.
        const auto start = std::chrono::steady_clock::now();
        const auto end = start + 3s, cap = start + 30s;
        int rounds = 0;
        std::string failure;
        try {
          for (bool done = false; !done;) {
            ++rounds;
            // The last element sums each rank's readiness to stop, so all ranks agree to stop
            // once every one of them is ready.
            std::vector<int32_t> a(4097, me + rounds);
            const auto now = std::chrono::steady_clock::now();
            const bool ready = now >= cap || (now >= end && rounds >= 20 && captures.load() >= 10);
            a[4096] = ready ? 1 : 0;
            ctx.pg->all_reduce(TensorView::cpu(a.data(), a.size(), DType::Int32))->wait();
            done = a[4096] == n;
            const int32_t want = n * rounds + n * (n - 1) / 2;
            testing::check(a[0] == want && a[4095] == want, "all_reduce round {}: {} != {}", rounds,
                           a[0], want);
            std::vector<float> b(1024, me == 1 ? 2.5f * rounds : -1.0f);
            BroadcastOptions bo;
            bo.root = 1;
            ctx.pg->broadcast(TensorView::cpu(b.data(), b.size(), DType::Float32), bo)->wait();
            testing::check(b[1023] == 2.5f * rounds, "broadcast round {}", rounds);
            std::vector<int64_t> mine(256, me * 1000 + rounds), all(256 * n);
            ctx.pg
                ->all_gather(TensorView::cpu(mine.data(), mine.size(), DType::Int64),
                             TensorView::cpu(all.data(), all.size(), DType::Int64))
                ->wait();
            for (int r = 0; r < n; ++r) {
              testing::check(all[256 * r + 255] == r * 1000 + rounds, "all_gather round {}",
                             rounds);
            }
            std::vector<int32_t> out(2048, me * 7 + rounds), in(2048, -1);
            auto sw =
                ctx.pg->send(TensorView::cpu(out.data(), out.size(), DType::Int32), (me + 1) % n);
            auto rw =
                ctx.pg->recv(TensorView::cpu(in.data(), in.size(), DType::Int32), (me + n - 1) % n);
            sw->wait();
            rw->wait();
            testing::check(in[2047] == ((me + n - 1) % n) * 7 + rounds, "recv round {}", rounds);
            Store& store = *ctx.pg->info().store;
            store.set(fmt::format("stress/{}/{}", rounds, me), std::to_string(rounds));
            const int64_t arrived = store.add(fmt::format("stress/{}/n", rounds), 1);
            testing::check(arrived >= 1 && arrived <= n, "store add round {}: {}", rounds, arrived);
            const std::string peer = fmt::format("stress/{}/{}", rounds, (me + 1) % n);
            store.wait({peer}, std::chrono::seconds(10));
            testing::check(store.get_string(peer) == std::to_string(rounds), "store get round {}",
                           rounds);
          }
        } catch (const std::exception& e) {
          failure = e.what();
        }
        stop = true;
        hammer.join();
        user_writer.join();
        user_reader.join();
        close(fds[0]);
        close(fds[1]);
        testing::check(user_eintr.load() == 0 && user_reads.load() > 100,
                       "rank {}: blocking read() saw EINTR {} times ({} reads)", me,
                       user_eintr.load(), user_reads.load());
        testing::check(failure.empty(), "rank {} failed under /v1/stacks after {} rounds: {}", me,
                       rounds, failure);
        testing::check(bad.load() == 0, "rank {}: {} /v1/stacks calls failed", me, bad.load());
        testing::check(captures.load() >= 10, "rank {}: only {} stack captures in {} rounds", me,
                       captures.load(), rounds);
        std::printf("rank %d: %d rounds with %d stack captures\n", me, rounds, captures.load());
        ctx.pg->barrier()->wait();
      },
      o);
  EXPECT_TRUE(result.ok()) << result.summary();
}

}  // namespace
}  // namespace collie
