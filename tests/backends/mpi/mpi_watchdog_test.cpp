// MpiWatchdog (backends/mpi/mpi_watchdog.h) on its own, no MPI: it reports a blocking op at its
// deadline, whatever longer op came before, and sleeps between deadlines instead of polling.
#include "backends/mpi/mpi_watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

namespace collie {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

struct Expiry {
  std::mutex mu;
  std::condition_variable cv;
  bool fired = false;
  uint64_t seq = 0;
  Steady::time_point at;
  MpiWatchdog::OnExpire handler() {
    return [this](OpType, uint64_t s, Millis) {
      std::lock_guard<std::mutex> lk(mu);
      fired = true;
      seq = s;
      at = Steady::now();
      cv.notify_all();
    };
  }
  bool wait(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lk(mu);
    return cv.wait_for(lk, limit, [&] { return fired; });
  }
};

// Ops that complete in time are never reported; then an op with a shorter timeout than any
// before, and one with the same short timeout after a long one: each reported at its deadline.
TEST(MpiWatchdog, ReportsAnOpAtItsDeadlineWhateverCameBefore) {
  for (const bool long_first : {false, true}) {
    Expiry e;
    MpiWatchdog wd(e.handler());
    for (uint64_t seq = 1; seq <= 100; ++seq) {  // in time
      wd.arm(OpType::AllReduce, seq, Millis(60000));
      wd.disarm();
    }
    if (long_first) {  // the thread learns the short timeout, then sleeps by a long op's deadline
      wd.arm(OpType::AllReduce, 101, Millis(200));
      wd.disarm();
      wd.arm(OpType::AllReduce, 102, Millis(60000));
      std::this_thread::sleep_for(50ms);
      wd.disarm();
    }
    const auto armed = Steady::now();
    wd.arm(OpType::Broadcast, 200, Millis(200));
    ASSERT_TRUE(e.wait(5s)) << "never reported (long op first: " << long_first << ")";
    const auto late = e.at - armed;
    EXPECT_EQ(e.seq, 200u);
    EXPECT_GE(late, 200ms);
    EXPECT_LT(late, 2s) << "reported " << std::chrono::duration<double>(late).count()
                        << " s after arming a 200 ms op";
  }
}

// The voluntary context switches of this process's thread named `name` (its sleeps that ended),
// from /proc; -1 when no thread has that name.
long sleeps_of(const std::string& name) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string c;
    std::getline(comm, c);
    if (c != name) continue;
    std::ifstream status(task.path() / "status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) return std::stol(line.substr(24));
    }
  }
  return -1;
}

// With ops far from their deadlines the thread sleeps: it does not wake 20 times a second (it
// polled every 50 ms, preempting a rank that spins in MPI: 12 wakes in these 600 ms).
TEST(MpiWatchdog, SleepsWhileNoDeadlineIsNear) {
  Expiry e;
  MpiWatchdog wd(e.handler());
  wd.arm(OpType::AllReduce, 1, Millis(30000));
  wd.disarm();
  std::this_thread::sleep_for(20ms);  // the thread takes in the first timeout
  const long before = sleeps_of("collie-mpi-wdog");
  ASSERT_GE(before, 0) << "no thread named collie-mpi-wdog";
  const auto until = Steady::now() + 600ms;
  for (uint64_t seq = 2; Steady::now() < until; ++seq) {
    wd.arm(OpType::AllReduce, seq, Millis(30000));
    std::this_thread::sleep_for(1ms);
    wd.disarm();
  }
  EXPECT_LE(sleeps_of("collie-mpi-wdog") - before, 2);
  EXPECT_FALSE(e.fired);
}

}  // namespace
}  // namespace collie
