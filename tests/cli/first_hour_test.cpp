// The first hour of a new user (issue 33), on the real `collie` binary: what someone who knows
// nccl-tests and torch.distributed types, and what they must see. One test (or a few) per item
// of the issue; each fails on the behaviour the issue reported.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_run.h"

namespace collie {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::ChildProcess;

using testing::CliRun;

CliRun collie(const std::vector<std::string>& args,
              const std::map<std::string, std::string>& env = {}) {
  return testing::run_collie(args, env, 60s);
}

size_t lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }
bool has(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}
size_t occurrences(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// A small, fast perf run (`np` ranks, one 8 B size, one iteration) plus `more`.
std::vector<std::string> tiny_perf(std::vector<std::string> more = {}, int np = 2) {
  std::vector<std::string> a = {"perf", "-np", std::to_string(np), "-b", "8", "-e", "8", "-n", "1",
                                "-w",   "0"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// `collie ARGS` with its CPU affinity set to the first core this test may use (as taskset does),
// so the result does not depend on the machine's core count.
CliRun run_pinned_to_one_core(const std::vector<std::string>& args) {
  cpu_set_t mine, one;
  EXPECT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &mine)) {
      CPU_SET(c, &one);
      break;
    }
  }
  // The child inherits the mask at fork; this thread's own mask is restored after.
  EXPECT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const CliRun r = collie(args);
  EXPECT_EQ(sched_setaffinity(0, sizeof mine, &mine), 0);
  return r;
}

// --- item 5: nccl-tests flags say what collie does instead -------------------------------------

TEST(FirstHour, NcclTestsThreadAndGpuFlagsSayWhatToDoInstead) {
  for (const auto& [flag, word] : {std::pair<std::string, std::string>{"-g", "one rank per GPU"},
                                   {"-t", "one rank per process"}}) {
    const CliRun r = collie({"perf", flag, "2"});
    EXPECT_EQ(r.code, 2) << flag << "\n" << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_TRUE(has(r.err, word) && has(r.err, "-np")) << r.err;
    EXPECT_FALSE(has(r.err, "not expected")) << r.err;
  }
  // What nccl-tests scripts pass (-t 1 -g 1) is what collie does: accepted.
  const CliRun ok = collie(tiny_perf({"-g", "1", "-t", "1"}));
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(has(ok.out, "# Collective test concluded: all_reduce_perf")) << ok.out;
}

TEST(FirstHour, TimeoutTakesSecondsAndDurations) {
  for (const std::string t : {"0.5", "30s", "1500ms", "1m"}) {
    const CliRun r = collie(tiny_perf({"-T", t}));
    EXPECT_EQ(r.code, 0) << "-T " << t << "\n" << r.err;
  }
  const CliRun bad = collie({"perf", "-T", "soon"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(lines(bad.err), 1u) << bad.err;
  EXPECT_TRUE(has(bad.err, "-T 'soon' is not a timeout") && has(bad.err, "30s")) << bad.err;
  // The default is written where a user reads: the flag's help.
  EXPECT_TRUE(has(collie({"perf", "--help"}).out, "5 minutes"));
}

TEST(FirstHour, HeaderSaysWhenLargeSizesRunFewerIterations) {
  const CliRun r = collie({"perf", "-np", "2", "-b", "2M", "-e", "2M", "-w", "0"});
  ASSERT_EQ(r.code, 0) << r.err;
  // Under the nThread line that says "iters: 20".
  EXPECT_TRUE(has(r.out,
                  "iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0\n# iters: 20 "
                  "up to 1 MiB, then 20 x 1 MiB / size, at least 2 (10 at 2097152 B)"))
      << r.out;
  // With -n every size runs that many: the header is nccl-tests' own, nothing added.
  const CliRun n = collie({"perf", "-np", "2", "-b", "2M", "-e", "2M", "-w", "0", "-n", "3"});
  ASSERT_EQ(n.code, 0) << n.err;
  EXPECT_FALSE(has(n.out, "# iters:")) << n.out;
}

TEST(FirstHour, PerfTakesTorchAndNcclTestsCollectiveNames) {
  for (const std::string name : {"all_to_all", "alltoall_perf", "alltoall"}) {
    // 64 B: 8 B on 2 ranks gives no rank an element to send, a sweep perf refuses (issue 40).
    const CliRun r =
        collie({"perf", "-np", "2", "-b", "64", "-e", "64", "-n", "1", "-w", "0", name});
    EXPECT_EQ(r.code, 0) << name << "\n" << r.err;
    EXPECT_TRUE(has(r.out, "# Collective test starting: alltoall_perf")) << name << "\n" << r.out;
  }
  const CliRun info = collie({"info"});
  EXPECT_TRUE(has(info.out, "all_to_all is alltoall")) << info.out;
}

// --- item 3: a verdict does not read like a crash ----------------------------------------------

struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("collie_first_hour") {}
};

TEST(FirstHour, AMissedBusbwFloorIsAVerdictNotACrash) {
  const CliRun r = collie(tiny_perf({"--min-busbw", "1000000"}));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(has(r.err, "collie perf: FAILED: avg bus bandwidth")) << r.err;
  EXPECT_FALSE(has(r.err, "collie launch")) << r.err;
  EXPECT_EQ(lines(r.err) - occurrences(r.err, "local ranks share"), 1u) << r.err;
}

TEST(FirstHour, ARejectedAcceptanceIsAVerdictNotACrash) {
  TempDir t;
  const std::string spec = t.write("spec.yaml",
                                   "name: unreachable floor\n"
                                   "backend: gloo\n"
                                   "timeout: 10s\n"
                                   "checks:\n"
                                   "  - perf: all_reduce\n"
                                   "    min_bytes: 1K\n"
                                   "    max_bytes: 1K\n"
                                   "    iters: 2\n"
                                   "    rules:\n"
                                   "      min_busbw_gbps:\n"
                                   "        1K: 1000000\n");
  const CliRun r = collie({"accept", "--spec", spec, "-np", "3"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "REJECTED")) << r.out;
  EXPECT_FALSE(has(r.err, "collie launch")) << r.err;
  EXPECT_FALSE(has(r.err, "exited with status")) << r.err;
}

// --- item 4: soak and cycle output -------------------------------------------------------------

// Data lines of an nccl-tests table (not '#').
size_t data_rows(const std::string& out) {
  size_t n = 0;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) n += !l.empty() && l[0] != '#';
  return n;
}

TEST(FirstHour, CyclesPrintOneTableAsNcclTestsDoes) {
  const CliRun r =
      collie({"perf", "-np", "2", "-b", "8", "-e", "32", "-n", "1", "-w", "0", "-N", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(occurrences(r.out, "# Collective test starting"), 1u) << r.out;
  EXPECT_EQ(occurrences(r.out, "# Using devices"), 1u) << r.out;
  EXPECT_EQ(occurrences(r.out, "# Avg bus bandwidth"), 1u) << r.out;
  EXPECT_EQ(occurrences(r.out, "# Collective test concluded"), 1u) << r.out;
  EXPECT_EQ(data_rows(r.out), 9u) << r.out;  // 3 sizes x 3 cycles, one after the other
  // Several collectives keep one table each per cycle, so rows never sit under another's header.
  const CliRun two = collie({"perf", "all_reduce,broadcast", "-np", "2", "-b", "8", "-e", "8", "-n",
                             "1", "-w", "0", "-N", "2"});
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_EQ(occurrences(two.out, "# Collective test starting"), 4u) << two.out;
}

// `-N 0` prints the header once and then rows, cycle after cycle, until stopped.
TEST(FirstHour, ASoakPrintsTheHeaderOnce) {
  ChildProcess job(
      {COLLIE_BIN, "perf", "-np", "2", "-b", "8", "-e", "8", "-n", "1", "-w", "0", "-N", "0"}, {});
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (data_rows(job.out()) < 10 && std::chrono::steady_clock::now() < deadline) {
    ASSERT_FALSE(job.wait(0ms).has_value()) << job.err();
    std::this_thread::sleep_for(50ms);
  }
  job.signal(SIGINT);
  ASSERT_EQ(job.wait(20s), 130) << job.err();
  EXPECT_GE(data_rows(job.out()), 10u);
  EXPECT_EQ(occurrences(job.out(), "# Collective test starting"), 1u) << job.out();
  EXPECT_EQ(occurrences(job.out(), "# Using devices"), 1u) << job.out();
}

// Once `job` (a perf run) prints rows, freezes its rank 1 with SIGSTOP, as a user would from
// another shell with the pid the header shows ("#  Rank  1 Group  0 Pid  12345 on ...").
// Returns that pid, or -1 (test failure) when there were no rows or no such line.
pid_t stop_rank1_once_rows_come(ChildProcess& job) {
  const bool rows =
      job.wait_for_err([&](const std::string&) { return data_rows(job.out()) > 0; }, 30s);
  EXPECT_TRUE(rows) << job.err();
  std::smatch m;
  const std::string out = job.out();
  if (!rows || !std::regex_search(out, m, std::regex(R"(Rank +1 Group +0 Pid +(\d+))"))) {
    ADD_FAILURE() << "no rank 1 in the header:\n" << out;
    return -1;
  }
  const pid_t rank1 = std::stoi(m[1]);
  EXPECT_EQ(::kill(rank1, SIGSTOP), 0);
  return rank1;
}

// A rank stopped under the default 5-minute timeout: rank 0 says within seconds where it waits
// and when it will give up, instead of minutes of silence.
TEST(FirstHour, AStoppedRankIsNotMinutesOfSilence) {
  ChildProcess job(
      {COLLIE_BIN, "perf", "-np", "2", "-b", "8", "-e", "8", "-n", "1", "-w", "0", "-N", "0"}, {});
  const pid_t rank1 = stop_rank1_once_rows_come(job);
  ASSERT_GT(rank1, 0);
  const bool said = job.wait_for_err(
      [](const std::string& err) {
        return has(err, "has run for 10 s; it fails after 300 s (-T sets that");
      },
      25s);
  ::kill(rank1, SIGCONT);
  job.signal(SIGINT);
  EXPECT_TRUE(said) << job.err();
  EXPECT_TRUE(job.wait(20s).has_value());
}

// --- item 6: an error is one line, said once ---------------------------------------------------

// A rank stopped under -T 2: the others time out. Every line is short, the timeout is said once,
// Gloo's source paths stay out of it, and the dump keeps the full error.
TEST(FirstHour, ATimeoutIsSaidOnceWithoutGloosSourcePaths) {
  TempDir t;
  const std::string dumps = (t.dir / "fr").string();
  ChildProcess job({COLLIE_BIN, "perf", "-np", "2", "-b", "8", "-e", "8", "-n", "1", "-w", "0",
                    "-N", "0", "-T", "2"},
                   {{"COLLIE_FR_DUMP_DIR", dumps}});
  const pid_t rank1 = stop_rank1_once_rows_come(job);
  ASSERT_GT(rank1, 0);
  const auto rc = job.wait(30s);
  ::kill(rank1, SIGCONT);
  ASSERT_EQ(rc, 3) << job.err();
  const std::string err = job.err();
  EXPECT_EQ(occurrences(err, "did not complete within 2000 ms"), 1u) << err;
  EXPECT_FALSE(has(err, "gloo/transport")) << err;
  // Named whichever step it froze in.
  EXPECT_TRUE(std::regex_search(err, std::regex("rank 1 (is still in|did not answer|has only)")))
      << err;
  std::istringstream in(err);
  for (std::string l; std::getline(in, l);) EXPECT_LT(l.size(), 450u) << l;
  const std::string dump = testing::read_file(dumps + "/first-failure/collie_fr_rank_0.json");
  EXPECT_TRUE(has(dump, "did not complete within 2000 ms")) << dump.substr(0, 400);
}

// A DETAIL mismatch in a program that does not catch it: each rank says it once (it was three
// times: an error log, the crash dump line and the C++ runtime's own), dump folder or not.
TEST(FirstHour, ADesyncIsSaidOncePerRank) {
  TempDir t;
  for (const bool dump_dir : {false, true}) {
    std::map<std::string, std::string> env = {{"COLLIE_DEBUG", "DETAIL"},
                                              {"COLLIE_TIMEOUT", "5000"}};
    if (dump_dir) env["COLLIE_FR_DUMP_DIR"] = (t.dir / "fr").string();
    const CliRun r = collie({"launch", "-np", "2", "--", MISMATCH_APP}, env);
    EXPECT_NE(r.code, 0);
    // Per rank at most once (the launcher may stop one rank before it prints), at least one.
    size_t said = 0;
    for (int rank = 0; rank < 2; ++rank) {
      size_t n = 0;
      std::istringstream in(r.err);
      for (std::string l; std::getline(in, l);) {
        n += l.starts_with(fmt::format("[{}] ", rank)) && has(l, "Detected mismatch");
      }
      EXPECT_LE(n, 1u) << "rank " << rank << "\n" << r.err;
      said += n;
    }
    EXPECT_GE(said, 1u) << r.err;
    if (dump_dir) {
      EXPECT_TRUE(has(r.err, "uncaught collie::DesyncError; flight recorder dumped")) << r.err;
    }
  }
}

// --- item 10: more ranks than cores is said ----------------------------------------------------

// The default run (4 ranks) on a machine with fewer cores says so; pinned to one core with
// taskset, 2 ranks do too, and 1 rank does not.
TEST(FirstHour, RanksOutnumberingTheCoresAreSaid) {
  const CliRun one = run_pinned_to_one_core(tiny_perf({}, 1));
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_FALSE(has(one.err, "share")) << one.err;
  const CliRun two = run_pinned_to_one_core(tiny_perf({}, 2));
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_TRUE(has(two.err,
                  "collie perf: 2 local ranks share 1 CPU core, so ranks wait for a "
                  "core and the times include that wait; -np 1 gives each rank a core"))
      << two.err;
  EXPECT_EQ(lines(two.err), 1u) << two.err;
}

// --- item 1: analyze --live usable as documented ---------------------------------------------

// A free TCP port on 127.0.0.1 (the kernel's pick; free again when this returns).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  close(fd);
  return ntohs(a.sin_port);
}

// `words` split at spaces.
std::vector<std::string> split(const std::string& words) {
  std::vector<std::string> out;
  std::istringstream in(words);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// A perf job with debug servers prints the `collie analyze --live` line; pasted as it is in
// another shell (no secret exported), and with http:// before the address, it answers for every
// rank; the job's secret is never printed.
TEST(FirstHour, ALiveJobPrintsTheAnalyzeLineThatWorksPasted) {
  const std::map<std::string, std::string> no_secret = {{"COLLIE_STORE_SECRET", ""}};
  std::map<std::string, std::string> env = no_secret;
  env["COLLIE_LOG_LEVEL"] = "info";  // "debug server for rank N at": when both serve
  ChildProcess job({COLLIE_BIN, "perf", "-np", "2", "--debug-port", "0", "--duration", "60s", "-b",
                    "8", "-e", "8", "-w", "0", "-n", "1"},
                   env);
  const std::regex line_re("collie perf: .*(collie analyze --live (127\\.0\\.0\\.1:([0-9]+)))\n");
  std::smatch m;
  std::string err;
  ASSERT_TRUE(job.wait_for_err(
      [&](const std::string& e) {
        err = e;
        return std::regex_search(err, m, line_re);
      },
      30s))
      << job.err();
  const std::string pasted = m[1], addr = m[2], port = m[3];
  // Both ranks serve (rank 1's server starts a moment after rank 0's).
  ASSERT_TRUE(job.wait_for_err(
      [](const std::string& e) { return has(e, "debug server for rank 1 at"); }, 30s))
      << job.err();
  std::vector<std::string> args = split(pasted);
  args.erase(args.begin());  // "collie"
  args.insert(args.end(), {"--stall", "60s"});
  const CliRun live = collie(args, no_secret);
  EXPECT_EQ(live.code, 0) << pasted << "\n" << live.out << live.err;
  EXPECT_TRUE(has(live.out, "2 of 2 ranks answered")) << live.out << live.err;
  const CliRun url =
      collie({"analyze", "--live", "http://" + addr + "/", "--stall", "60s"}, no_secret);
  EXPECT_EQ(url.code, 0) << url.out << url.err;
  // The secret the launcher left for this user only, never on the job's output.
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  const fs::path secret_file = (runtime != nullptr && runtime[0] == '/'
                                    ? fs::path(runtime) / "collie"
                                    : fs::path(fmt::format("/tmp/collie-{}", getuid()))) /
                               fmt::format("store-{}.secret", port);
  std::string secret;
  std::ifstream(secret_file) >> secret;
  EXPECT_EQ(secret.size(), 64u) << secret_file;
  EXPECT_EQ(fs::status(secret_file).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  job.signal(SIGINT);
  ASSERT_TRUE(job.wait(30s).has_value()) << job.err();
  EXPECT_FALSE(secret.empty() || has(job.err(), secret) || has(job.out(), secret));
  EXPECT_FALSE(fs::exists(secret_file)) << "left behind after the job";
}

// MASTER_ADDR and MASTER_PORT choose the local ranks' store (so the address is known before the
// job starts); one of them alone stops with one line naming the other, exit 2 (launchers.md).
TEST(FirstHour, MasterPortIsHonouredAndAloneIsRefused) {
  const std::string port = std::to_string(free_port());
  const CliRun both = collie(tiny_perf({"--debug-port", "0"}),
                             {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}});
  EXPECT_EQ(both.code, 0) << both.err;
  EXPECT_TRUE(has(both.err, "collie analyze --live 127.0.0.1:" + port + "\n")) << both.err;
  const CliRun alone = collie(tiny_perf(), {{"MASTER_ADDR", ""}, {"MASTER_PORT", port}});
  EXPECT_EQ(alone.code, 2) << alone.err;
  EXPECT_EQ(lines(alone.err), 1u) << alone.err;
  EXPECT_TRUE(has(alone.err, "MASTER_PORT is set but MASTER_ADDR is not")) << alone.err;
  // Without debug servers there is nothing to attach to: no line.
  const CliRun plain = collie(tiny_perf());
  EXPECT_FALSE(has(plain.err, "analyze --live")) << plain.err;
}

TEST(FirstHour, LiveTakesAnAddressWithOrWithoutScheme) {
  const CliRun bad = collie({"analyze", "--live", "ftp://127.0.0.1:1"});
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_EQ(lines(bad.err), 1u) << bad.err;
  EXPECT_TRUE(has(bad.err, "HOST:PORT") && has(bad.err, "http://")) << bad.err;
  // Accepted forms reach the connection (nothing listens on port 1): not a usage error.
  for (const char* a : {"127.0.0.1:1", "tcp://127.0.0.1:1", "http://127.0.0.1:1/"}) {
    const CliRun r = collie({"analyze", "--live", a, "--timeout", "1s"});
    EXPECT_NE(r.code, 2) << a << "\n" << r.err;
    EXPECT_FALSE(has(r.err, "is not HOST:PORT")) << a << "\n" << r.err;
  }
}

}  // namespace
}  // namespace collie
