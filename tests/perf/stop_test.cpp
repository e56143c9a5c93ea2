// Ctrl-C and SIGTERM stop a long `collie perf` cleanly: real ranks as processes, signals sent the
// way a user or a batch system sends them. Every rank stops after the same row, every completed
// row is in the table, the JSON (valid, written atomically), CSV and JSONL, the exit status
// is 128 + signal, and nothing claims the run is complete: the JSON has "complete": false, no
// summary and names the signal, and the table has no "Avg bus bandwidth" line.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "comm/registry.h"
#include "reports/json_io.h"
#include "support/child_process.h"

namespace {

using collie::testing::ChildProcess;
using collie::testing::read_file;
using namespace std::chrono_literals;

std::string tmp(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("collie_perf_stop_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

size_t count_lines(const std::string& text, const std::string& prefix = "") {
  std::istringstream in(text);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) n += line.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

// Table data lines (not '#' comments) in the launcher's "[0] "-prefixed or plain stdout.
size_t table_rows(const std::string& out) {
  std::istringstream in(out);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    if (line.rfind("[0] ", 0) == 0) line = line.substr(4);
    if (!line.empty() && line[0] != '#' && line[0] != '[') ++n;
  }
  return n;
}

// A port on 127.0.0.1 that nothing listens on now (the kernel's pick; closed again).
int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  if (fd >= 0) ::close(fd);
  return ok ? ntohs(a.sin_port) : 0;
}

bool accepts_connections(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

class PerfStop : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(collie::find_backend("gloo"), nullptr)
        << "gloo is a required backend (cmake/Dependencies.cmake) but is not registered";
    for (auto* p : {&json_, &csv_, &jsonl_}) std::filesystem::remove(*p);
  }
  void TearDown() override {
    for (auto* p : {&json_, &csv_, &jsonl_}) std::filesystem::remove(*p);
  }
  std::vector<std::string> perf_args(std::vector<std::string> head) const {
    for (const char* a : {"perf", "-b", "8", "-e", "4K", "-w", "0", "-n", "2", "-c", "1"}) {
      head.push_back(a);
    }
    for (const auto& a : {"-J", json_.c_str(), "--csv", csv_.c_str(), "--jsonl", jsonl_.c_str()}) {
      head.push_back(a);
    }
    return head;
  }
  // Waits until the soak has written a few cycles of rows.
  void wait_for_rows(ChildProcess& job, size_t rows) {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (count_lines(read_file(jsonl_)) < rows && std::chrono::steady_clock::now() < deadline) {
      ASSERT_FALSE(job.wait(0ms).has_value()) << "perf ended early:\n" << job.err();
      std::this_thread::sleep_for(50ms);
    }
    ASSERT_GE(count_lines(read_file(jsonl_)), rows) << job.err();
  }
  // Every completed row is in every output, the JSON holds the interrupted cycle's rows, and
  // nothing claims the run completed.
  void expect_rows_kept_and_run_incomplete(const std::string& table_out, const char* signal) {
    const std::string jsonl = read_file(jsonl_);
    const size_t n = count_lines(jsonl);
    std::istringstream in(jsonl);
    std::string line;
    int last_cycle = -1;
    while (std::getline(in, line)) {
      ASSERT_NO_THROW(last_cycle = nlohmann::json::parse(line).at("cycle").get<int>()) << line;
    }
    EXPECT_EQ(count_lines(read_file(csv_)), n + 1);  // + header
    EXPECT_EQ(table_rows(table_out) * 2, n);         // out + in per table line
    const auto res = collie::reports::read_results(json_);
    ASSERT_FALSE(res.rows.empty());
    EXPECT_FALSE(res.summary.has_value());
    EXPECT_EQ(res.meta.interrupted_by, signal);
    EXPECT_FALSE(nlohmann::json::parse(read_file(json_)).at("complete").get<bool>());
    // One table for every cycle (as nccl-tests' -N); an interrupted run has no trailer.
    EXPECT_EQ(table_out.find("# Collective test starting"),
              table_out.rfind("# Collective test starting"))
        << table_out;
    const size_t last = table_out.rfind("# Collective test starting");
    ASSERT_NE(last, std::string::npos) << table_out;
    EXPECT_EQ(table_out.find("Avg bus bandwidth", last), std::string::npos) << table_out;
    EXPECT_NE(table_out.find("# Interrupted by " + std::string(signal), last), std::string::npos)
        << table_out;
    for (const auto& r : res.rows) EXPECT_EQ(r.cycle, last_cycle);
    EXPECT_GE(last_cycle, 1) << "stopped before the soak ran a second cycle";
  }
  std::string json_ = tmp("r.json"), csv_ = tmp("r.csv"), jsonl_ = tmp("r.jsonl");
};

TEST_F(PerfStop, CtrlCToCollieLaunchStopsEveryRankAfterTheSameRow) {
  // A grace far above the test's wait: only a clean stop ends the job in time.
  auto argv = perf_args({COLLIE_BIN, "launch", "-np", "4", "--grace", "60s", "--", COLLIE_BIN});
  argv.push_back("-N");
  argv.push_back("0");
  ChildProcess job(argv, {});
  wait_for_rows(job, 40);
  const auto t0 = std::chrono::steady_clock::now();
  job.signal(SIGINT);
  const auto rc = job.wait(15s);
  ASSERT_TRUE(rc.has_value()) << "still running 15 s after SIGINT\n" << job.err();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  EXPECT_EQ(*rc, 130) << job.err();
  const std::string err = job.err();
  EXPECT_NE(err.find("[0] collie perf: stopped by Interrupt after"), std::string::npos) << err;
  EXPECT_EQ(err.find("Killed"), std::string::npos) << err;
  expect_rows_kept_and_run_incomplete(job.out(), "SIGINT");
}

TEST_F(PerfStop, SigtermToPerfNpEndsTheDurationSoakWith143) {
  auto argv = perf_args({COLLIE_BIN});
  for (const char* a : {"-np", "3", "--duration", "10m"}) argv.push_back(a);
  ChildProcess job(argv, {});
  wait_for_rows(job, 30);
  job.signal(SIGTERM);
  const auto rc = job.wait(15s);
  ASSERT_TRUE(rc.has_value()) << "still running 15 s after SIGTERM\n" << job.err();
  EXPECT_EQ(*rc, 143) << job.err();
  EXPECT_NE(job.err().find("collie perf: stopped by Terminated after"), std::string::npos)
      << job.err();
  expect_rows_kept_and_run_incomplete(job.out(), "SIGTERM");
}

TEST_F(PerfStop, ASignalToOneRankStopsThemAll) {
  // Only rank 2 is told to stop (as a batch system might); its flag reaches the others with the
  // next row's results, so rank 0 (never signalled) ends the run and writes every result.
  auto argv = perf_args({COLLIE_BIN, "launch", "-np", "3", "--grace", "60s", "--", COLLIE_BIN});
  argv.push_back("-N");
  argv.push_back("0");
  ChildProcess job(argv, {{"COLLIE_LOG_LEVEL", "info"}});
  wait_for_rows(job, 30);
  // Rank 2's pid from the launcher's children (ranks are its direct children, spawned in order).
  std::vector<pid_t> kids;
  std::istringstream in(read_file("/proc/" + std::to_string(job.pid()) + "/task/" +
                                  std::to_string(job.pid()) + "/children"));
  for (pid_t p; in >> p;) kids.push_back(p);
  ASSERT_EQ(kids.size(), 3u);
  kill(kids[2], SIGTERM);
  const auto rc = job.wait(15s);
  ASSERT_TRUE(rc.has_value()) << "still running 15 s after SIGTERM to rank 2\n" << job.err();
  EXPECT_EQ(*rc, 143) << job.err();  // rank 2's status, reported by the launcher
  EXPECT_NE(job.err().find("[0] collie perf: stopped by Terminated after"), std::string::npos)
      << job.err();
  expect_rows_kept_and_run_incomplete(job.out(), "SIGTERM");
}

// A plain sweep (not a soak) interrupted at three points. The JSON on disk is valid at every
// point and never says "complete": true; rows are those the table shows.
class PerfSweepInterrupt : public PerfStop {
 protected:
  // 2 ranks, 8 B .. 64 KiB, every timed call slowed by `delay_us` on rank 1 (a test hook).
  ChildProcess start(int delay_us) {
    std::vector<std::string> argv = {COLLIE_BIN, "perf", "-np", "2",   "-b",      "8",
                                     "-e",       "64K",  "-w",  "0",   "-n",      "4",
                                     "-c",       "1",    "-J",  json_, "--jsonl", jsonl_};
    return ChildProcess(argv, {{"COLLIE_ENABLE_TEST_HOOKS", "1"},
                               {"COLLIE_PERF_TEST_DELAY_US", "1:" + std::to_string(delay_us)}});
  }
  // The JSON (when the run got far enough to write one) is valid and incomplete.
  void expect_incomplete_json(const std::string& table_out) {
    if (!std::filesystem::exists(json_)) return;  // stopped before the run started: nothing claimed
    const auto j = nlohmann::json::parse(read_file(json_));
    EXPECT_FALSE(j.at("complete").get<bool>()) << j.dump();
    EXPECT_FALSE(j.contains("summary")) << j.dump();
    EXPECT_EQ(j.at("rows").size(), table_rows(table_out) * 2) << table_out;
    EXPECT_EQ(table_out.find("Avg bus bandwidth"), std::string::npos) << table_out;
  }
};

// Before the first row, deterministically: rank 0 started alone (as a user's launcher or job
// script starts each rank) hosts the store and waits in rendezvous for rank 1, which never comes.
// Ctrl-C there ends it at once, with no row and nothing claimed. (Signalling the launcher "soon
// after the start" instead raced the start-up: on a quiet machine the ranks were already in the
// first row, whose run is finished, and the test saw one row.)
TEST_F(PerfSweepInterrupt, BeforeTheFirstRow) {
  const int port = free_loopback_port();
  ChildProcess rank0({COLLIE_BIN, "perf", "-b", "8", "-e", "64K", "-w", "0", "-n", "4", "-c", "1",
                      "-J", json_, "--jsonl", jsonl_},
                     {{"MASTER_ADDR", "127.0.0.1"},
                      {"MASTER_PORT", std::to_string(port)},
                      {"RANK", "0"},
                      {"WORLD_SIZE", "2"}});
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!accepts_connections(port) && std::chrono::steady_clock::now() < deadline) {
    ASSERT_FALSE(rank0.wait(0ms).has_value()) << "rank 0 ended early:\n" << rank0.err();
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(accepts_connections(port)) << "rank 0 never hosted the store\n" << rank0.err();
  std::this_thread::sleep_for(200ms);  // well inside rendezvous: rank 1 is never coming
  ASSERT_FALSE(rank0.wait(0ms).has_value()) << rank0.err();
  const auto t0 = std::chrono::steady_clock::now();
  rank0.signal(SIGINT);
  const auto rc = rank0.wait(10s);
  ASSERT_TRUE(rc.has_value()) << "Ctrl-C in rendezvous did not end rank 0\n" << rank0.err();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_EQ(*rc, 128 + SIGINT) << rank0.err();
  EXPECT_EQ(table_rows(rank0.out()), 0u) << rank0.out();
  EXPECT_EQ(count_lines(read_file(jsonl_)), 0u);
  expect_incomplete_json(rank0.out());
}

TEST_F(PerfSweepInterrupt, MidRow) {
  // 4 timed calls of 300 ms on rank 1: the first row takes over a second. Signal once the run
  // has started (its JSON exists) and before any row is done: the row in flight is finished.
  ChildProcess job = start(300000);
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!std::filesystem::exists(json_) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(std::filesystem::exists(json_)) << job.err();
  ASSERT_EQ(count_lines(read_file(jsonl_)), 0u);
  job.signal(SIGINT);
  const auto rc = job.wait(30s);
  ASSERT_TRUE(rc.has_value()) << job.err();
  EXPECT_EQ(*rc, 130) << job.err();
  EXPECT_EQ(table_rows(job.out()), 1u) << job.out();
  expect_incomplete_json(job.out());
  EXPECT_EQ(collie::reports::read_results(json_).meta.interrupted_by, "SIGINT");
}

TEST_F(PerfSweepInterrupt, BetweenRows) {
  ChildProcess job = start(20000);
  wait_for_rows(job, 4);  // two table rows (out + in each) are done
  job.signal(SIGTERM);
  const auto rc = job.wait(30s);
  ASSERT_TRUE(rc.has_value()) << job.err();
  EXPECT_EQ(*rc, 143) << job.err();
  const size_t n = table_rows(job.out());
  EXPECT_GE(n, 2u);
  EXPECT_LT(n, 14u) << "the whole sweep ran: the signal was not seen";  // 8 B .. 64 KiB = 14 rows
  expect_incomplete_json(job.out());
  EXPECT_EQ(collie::reports::read_results(json_).meta.interrupted_by, "SIGTERM");
}

}  // namespace
