// GET /v1/stacks while the rank exits (issue 27): exit handlers used to destroy the stack
// symbolizer (a function-local static built on the first capture) while the debug server,
// destroyed later, was still capturing with it: SIGSEGV in libdw, and a successful job exited
// 139. Real processes: a one-rank job whose debug server two clients hammer with /v1/stacks
// (one of them also with every other endpoint that reads process-wide state) until it returns
// from main; every run must exit 0.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "support/child_process.h"

namespace collie {
namespace {

using namespace std::chrono_literals;

TEST(StacksAtExit, ARankExitsCleanlyWhileItsStacksAreBeingCaptured) {
  constexpr int kRuns = 8;
  int captures_during_exit = 0;
  for (int run = 0; run < kRuns; ++run) {
    testing::ChildProcess job({COLLIE_EXIT_JOB},
                              {{"COLLIE_DEBUG_PORT", "0"}, {"COLLIE_TEST_EXIT_AFTER_MS", "400"}});
    int port = 0;
    for (int i = 0; i < 200 && port == 0; ++i) {
      std::sscanf(job.out().c_str(), "port %d", &port);
      if (port == 0) std::this_thread::sleep_for(25ms);
    }
    ASSERT_NE(port, 0) << "run " << run << ": no port; stderr: " << job.err();
    std::atomic<bool> done{false};
    std::atomic<int> ok{0};
    std::vector<std::thread> hammers;
    for (int h = 0; h < 2; ++h) {
      hammers.emplace_back([&, h] {
        static constexpr const char* kOthers[] = {
            "/v1/flight_recorder", "/v1/status",
            "/v1/config",          "/metrics",
            "/metrics/inspector",  "/v1/cluster/status?timeout_ms=200"};
        for (size_t i = 0; !done.load(); ++i) {
          httplib::Client cli("127.0.0.1", port);
          cli.set_connection_timeout(1, 0);
          cli.set_read_timeout(5, 0);
          const bool stacks = h == 0 || i % 2 == 0;
          auto r = cli.Get(stacks ? "/v1/stacks?max_frames=16" : kOthers[(i / 2) % 6]);
          if (r && r->status == 200 && stacks) ++ok;
        }
      });
    }
    const auto status = job.wait(30s);
    done = true;
    for (auto& t : hammers) t.join();
    ASSERT_TRUE(status.has_value()) << "run " << run << ": the job did not exit";
    EXPECT_EQ(*status, 0) << "run " << run << ": exit status " << *status
                          << " (139 = SIGSEGV); stderr: " << job.err();
    EXPECT_GT(ok.load(), 0) << "run " << run << ": no capture was served at all";
    captures_during_exit += ok.load();
  }
  std::printf("%d captures served over %d runs\n", captures_during_exit, kRuns);
}

}  // namespace
}  // namespace collie
