// The launcher with real child processes (/bin/sh scripts): environment, line prefixes,
// fail-fast, exit status, signal forwarding, and the `collie launch` command itself.
#include "launch/launch.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "launch/cpu_binding.h"
#include "launch/line_buffer.h"
#include "launch/output_queue.h"
#include "store/local_secret.h"
#include "store/socket_util.h"
#include "store/store_secret.h"

namespace collie::launch {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

// A temporary file that collects one output stream.
class Capture {
 public:
  Capture() {
    char tmpl[] = "/tmp/collie_launch_XXXXXX";
    fd_ = mkstemp(tmpl);
    path_ = tmpl;
  }
  ~Capture() {
    close(fd_);
    unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  std::string text() const {
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::vector<std::string> sorted_lines() const {
    std::vector<std::string> out;
    std::stringstream ss(text());
    for (std::string l; std::getline(ss, l);) out.push_back(l);
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  int fd_;
  std::string path_;
};

LaunchSpec sh(int np, const std::string& script, const Capture& out, const Capture& err) {
  LaunchSpec s;
  s.nprocs = np;
  s.argv = {"/bin/sh", "-c", script};
  s.out_fd = out.fd();
  s.err_fd = err.fd();
  s.kill_grace = 500ms;
  return s;
}

TEST(Launch, SetsRankEnvironmentAndPrefixesLines) {
  Capture out, err;
  LaunchSpec s = sh(3,
                    "echo \"$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $MASTER_ADDR "
                    "$MASTER_PORT $EXTRA ${SLURM_PROCID:-none}\"; echo oops >&2; read x || true",
                    out, err);
  s.extra_env = {{"EXTRA", "x"}};
  setenv("SLURM_PROCID", "7", 1);  // an enclosing launcher's rank must not leak into children
  const LaunchResult r = run(s);
  unsetenv("SLURM_PROCID");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.failed_rank, -1);
  ASSERT_NE(r.master_port, 0);
  const std::string p = std::to_string(r.master_port);
  EXPECT_EQ(out.sorted_lines(),
            (std::vector<std::string>{"[0] 0 3 0 3 127.0.0.1 " + p + " x none",
                                      "[1] 1 3 1 3 127.0.0.1 " + p + " x none",
                                      "[2] 2 3 2 3 127.0.0.1 " + p + " x none"}));
  std::vector<std::string> errs = err.sorted_lines();
  // On a machine with fewer than 3 CPUs the launcher adds its one-line note (tested below).
  std::erase_if(errs,
                [](const std::string& l) { return l.starts_with("collie launch: 3 local ranks"); });
  EXPECT_EQ(errs, (std::vector<std::string>{"[0] oops", "[1] oops", "[2] oops"}));
}

TEST(CpuBinding, SharesRoundRobinAndNone) {
  const std::vector<int> cpus = {0, 1, 2, 3, 4, 5, 6, 7};
  using Sets = std::vector<std::vector<int>>;
  EXPECT_EQ(rank_cpus(2, cpus, Binding::Auto), (Sets{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(rank_cpus(3, cpus, Binding::Auto), (Sets{{0, 1, 2}, {3, 4, 5}, {6, 7}}));
  EXPECT_EQ(rank_cpus(3, {2, 5}, Binding::Auto), (Sets{{2}, {5}, {2}}));  // ranks > CPUs
  EXPECT_EQ(rank_cpus(2, cpus, Binding::None), (Sets{{}, {}}));
  EXPECT_EQ(rank_cpus(2, {}, Binding::Auto), (Sets{{}, {}}));  // CPUs unknown: not bound
  EXPECT_EQ(describe_binding(rank_cpus(3, {2, 5}, Binding::Auto), 2),
            "rank 0 on CPU 2; rank 1 on CPU 5; rank 2 on CPU 2 (3 ranks on 2 CPUs take turns)");
  EXPECT_EQ(parse_binding("none"), Binding::None);
  EXPECT_THROW(parse_binding("cores"), InvalidArgument);
}

// The ranks run on the CPUs rank_cpus gives them (the kernel's view: /proc/self/status), and
// more ranks than CPUs get a one-line note; --bind none leaves them on every allowed CPU.
TEST(Launch, BindsEachRankToItsShareOfTheCpus) {
  const std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  const int n = static_cast<int>(cpus.size());
  auto lists = [](int np, Binding b, std::string* errors) {
    Capture out, err;
    LaunchSpec s = sh(np, "grep Cpus_allowed_list /proc/self/status | tr -d '\\t'", out, err);
    s.bind = b;
    EXPECT_EQ(run(s).exit_code, 0) << err.text();
    *errors = err.text();
    return out.sorted_lines();
  };
  std::string errors;
  const auto sets = rank_cpus(n + 1, cpus, Binding::Auto);
  std::vector<std::string> want;
  for (int r = 0; r <= n; ++r)
    want.push_back("[" + std::to_string(r) + "] Cpus_allowed_list:" + std::to_string(sets[r][0]));
  std::sort(want.begin(), want.end());
  EXPECT_EQ(lists(n + 1, Binding::Auto, &errors), want);
  EXPECT_NE(errors.find("collie launch: " + std::to_string(n + 1) + " local ranks share " +
                        std::to_string(n) + " CPU core"),
            std::string::npos)
      << errors;
  const auto unbound = lists(2, Binding::None, &errors);
  ASSERT_EQ(unbound.size(), 2u);
  EXPECT_EQ(unbound[0].substr(3), unbound[1].substr(3));
  EXPECT_EQ(errors, "");
  if (n >= 2) {
    const auto bound = lists(2, Binding::Auto, &errors);
    EXPECT_NE(bound[0].substr(3), bound[1].substr(3)) << "two ranks share their CPUs";
  }
}

// Each job gets its own store secret (issue 17): 64 hex characters from /dev/urandom, the same
// for every rank of the job, new for the next job; one the user exported is used as is.
TEST(Launch, EveryRankGetsANewStoreSecretPerJob) {
  unsetenv("COLLIE_STORE_SECRET");
  auto secrets = [] {
    Capture out, err;
    const LaunchResult r = run(sh(3, "echo \"$COLLIE_STORE_SECRET\"", out, err));
    EXPECT_EQ(r.exit_code, 0) << err.text();
    std::vector<std::string> v;
    for (const std::string& line : out.sorted_lines()) v.push_back(line.substr(4));
    return v;
  };
  const std::vector<std::string> a = secrets(), b = secrets();
  setenv("COLLIE_STORE_SECRET", "chosen-by-the-user", 1);
  const std::vector<std::string> c = secrets();
  unsetenv("COLLIE_STORE_SECRET");
  EXPECT_EQ(c, std::vector<std::string>(3, "chosen-by-the-user"));
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(a[0].size(), 64u) << a[0];
  EXPECT_EQ(a[0].find_first_not_of("0123456789abcdef"), std::string::npos) << a[0];
  EXPECT_EQ(a[0], a[1]);
  EXPECT_EQ(a[0], a[2]);
  EXPECT_EQ(b[0], b[2]);
  EXPECT_NE(a[0], b[0]);
}

TEST(Launch, PartialLinesAreJoinedAndNeverInterleaved) {
  Capture out, err;
  // Every rank writes its lines in pieces, concurrently with the others.
  const LaunchResult r = run(sh(4,
                                "for i in 1 2 3 4 5; do printf \"r$RANK-\"; sleep 0.01; "
                                "printf \"line$i\\n\"; done; printf tail",
                                out, err));
  EXPECT_EQ(r.exit_code, 0);
  const auto lines = out.sorted_lines();
  ASSERT_EQ(lines.size(), 24u);
  for (int rank = 0; rank < 4; ++rank) {
    const std::string pre = "[" + std::to_string(rank) + "] ";
    for (int i = 1; i <= 5; ++i) {
      const std::string want = pre + "r" + std::to_string(rank) + "-line" + std::to_string(i);
      EXPECT_TRUE(std::binary_search(lines.begin(), lines.end(), want)) << want;
    }
    EXPECT_TRUE(std::binary_search(lines.begin(), lines.end(), pre + "tail"));
  }
}

TEST(Launch, NoPrefixOption) {
  Capture out, err;
  LaunchSpec s = sh(2, "echo plain", out, err);
  s.prefix_output = false;
  EXPECT_EQ(run(s).exit_code, 0);
  EXPECT_EQ(out.text(), "plain\nplain\n");
}

TEST(Launch, FailingRankStopsTheOthersQuicklyAndSetsTheStatus) {
  Capture out, err;
  const auto start = Steady::now();
  // Rank 2 fails; the others would run 30 s (rank 0 even ignores SIGTERM, so it needs SIGKILL).
  LaunchSpec s = sh(4,
                    "if [ $RANK = 2 ]; then sleep 0.2; exit 7; fi; "
                    "if [ $RANK = 0 ]; then trap '' TERM; fi; sleep 30",
                    out, err);
  s.who = "collie perf";  // the command that launched its ranks names itself in the line
  const LaunchResult r = run(s);
  EXPECT_LT(Steady::now() - start, 5s);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.failed_rank, 2);
  EXPECT_NE(err.text().find("collie perf: rank 2 exited with status 7; stopping the other ranks"),
            std::string::npos)
      << err.text();
}

// The long grace is for a user's Ctrl-C only: a failed rank (or the job deadline) gets a rank
// that ignores SIGTERM (or is frozen) killed after failure_grace, not kill_grace.
TEST(Launch, FailureUsesTheShortGraceNotTheInterruptGrace) {
  Capture out, err;
  LaunchSpec s = sh(3,
                    "if [ $RANK = 1 ]; then sleep 0.2; exit 3; fi; "
                    "if [ $RANK = 2 ]; then kill -STOP $$; fi; trap '' TERM; sleep 60",
                    out, err);
  s.kill_grace = 30s;
  s.failure_grace = 1s;
  auto start = Steady::now();
  LaunchResult r = run(s);
  EXPECT_LT(Steady::now() - start, 4s);
  EXPECT_GE(Steady::now() - start, 1s);
  EXPECT_EQ(r.failed_rank, 1);
  EXPECT_EQ(r.exit_code, 3);
  // The same for the job deadline.
  s = sh(2, "trap '' TERM; sleep 60", out, err);
  s.kill_grace = 30s;
  s.failure_grace = 1s;
  s.timeout = 300ms;
  start = Steady::now();
  r = run(s);
  EXPECT_LT(Steady::now() - start, 4s);
  EXPECT_TRUE(r.timed_out);
}

// A verdict (a rank that printed "REJECTED" and exits 1) is not a crash: no "exited with status"
// line, the other ranks finish what they do (rank 1 writes its last line 0.5 s later), and the
// job's status is the verdict.
TEST(Launch, AVerdictStatusLetsTheOthersFinishWithoutALine) {
  Capture out, err;
  LaunchSpec s = sh(3,
                    "if [ $RANK = 0 ]; then echo REJECTED; exit 1; fi; sleep 0.5; "
                    "echo \"rank $RANK done\"",
                    out, err);
  s.verdict_statuses = {1, 5};
  const LaunchResult r = run(s);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.failed_rank, -1);
  // Nothing about the verdict (3 ranks on a machine of fewer cores get the one line saying so).
  EXPECT_EQ(err.text().find("exited"), std::string::npos) << err.text();
  EXPECT_EQ(err.text().find("stopping"), std::string::npos) << err.text();
  EXPECT_NE(out.text().find("[1] rank 1 done"), std::string::npos) << out.text();
  EXPECT_NE(out.text().find("[2] rank 2 done"), std::string::npos) << out.text();
  // A rank failing after a verdict is still a failure, and its status wins.
  s = sh(2, "if [ $RANK = 0 ]; then exit 5; fi; sleep 0.3; exit 4", out, err);
  s.verdict_statuses = {1, 5};
  EXPECT_EQ(run(s).exit_code, 4);
  EXPECT_NE(err.text().find("rank 1 exited with status 4"), std::string::npos) << err.text();
}

// Ranks that outlive a verdict by verdict_grace (stuck where the verdict rank left them) are
// stopped, with one line saying why.
TEST(Launch, RanksOutlivingAVerdictAreStoppedAfterItsGrace) {
  Capture out, err;
  LaunchSpec s = sh(2, "if [ $RANK = 0 ]; then exit 1; fi; sleep 60", out, err);
  s.verdict_statuses = {1};
  s.verdict_grace = 300ms;
  const auto start = Steady::now();
  const LaunchResult r = run(s);
  EXPECT_LT(Steady::now() - start, 5s);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(err.text().find("rank 0 gave its verdict (status 1) 300 ms ago and some ranks are "
                            "still running; stopping them"),
            std::string::npos)
      << err.text();
}

TEST(Launch, KilledRankReportsTheSignal) {
  Capture out, err;
  const LaunchResult r = run(sh(2, "if [ $RANK = 1 ]; then kill -9 $$; fi; sleep 30", out, err));
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_EQ(r.failed_rank, 1);
  EXPECT_NE(err.text().find("rank 1 was killed"), std::string::npos) << err.text();
}

TEST(Launch, JobTimeoutStopsEveryRank) {
  Capture out, err;
  LaunchSpec s = sh(2, "sleep 30", out, err);
  s.timeout = 300ms;
  const auto start = Steady::now();
  const LaunchResult r = run(s);
  EXPECT_LT(Steady::now() - start, 5s);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, 124);
}

TEST(Launch, BadSpecIsInvalidArgument) {
  LaunchSpec s;
  s.nprocs = 0;
  s.argv = {"true"};
  EXPECT_ANY_THROW(run(s));
  s.nprocs = 1;
  s.argv = {};
  EXPECT_ANY_THROW(run(s));
}

// The launcher runs in a forked child; SIGTERM sent to it must reach every rank.
TEST(Launch, ForwardsSigtermToEveryRank) {
  Capture out, err;
  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    LaunchSpec s = sh(3,
                      "trap 'echo got-term; exit 0' TERM; echo ready; "
                      "while true; do sleep 0.05; done",
                      out, err);
    _exit(run(s).exit_code);
  }
  const auto deadline = Steady::now() + 10s;
  while (out.sorted_lines().size() < 3 && Steady::now() < deadline)
    std::this_thread::sleep_for(20ms);
  ASSERT_EQ(out.sorted_lines().size(), 3u) << out.text();
  kill(launcher, SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(launcher, &status, 0), launcher);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  const auto lines = out.sorted_lines();
  for (int r = 0; r < 3; ++r) {
    const std::string want = "[" + std::to_string(r) + "] got-term";
    EXPECT_TRUE(std::binary_search(lines.begin(), lines.end(), want)) << out.text();
  }
}

bool process_alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_s, comm, state;
  if (!(stat >> pid_s >> comm >> state)) return false;
  return state != "Z" && state != "X";
}

// A launcher that dies without cleaning up (SIGKILL) must not leave its ranks running.
TEST(Launch, RanksDieWithTheLauncher) {
  Capture out, err;
  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    _exit(run(sh(2, "echo $$; exec sleep 30", out, err)).exit_code);
  }
  const auto deadline = Steady::now() + 10s;
  while (out.sorted_lines().size() < 2 && Steady::now() < deadline)
    std::this_thread::sleep_for(20ms);
  const auto lines = out.sorted_lines();
  ASSERT_EQ(lines.size(), 2u) << out.text();
  std::vector<pid_t> ranks;
  for (const auto& l : lines) ranks.push_back(std::stoi(l.substr(l.find(' ') + 1)));
  kill(launcher, SIGKILL);
  waitpid(launcher, nullptr, 0);
  for (pid_t r : ranks) {
    const auto until = Steady::now() + 5s;
    while (process_alive(r) && Steady::now() < until) std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(process_alive(r)) << "rank pid " << r << " outlived the launcher";
  }
}

// Waits up to `within` for `pid` to exit; kills it (and fails the caller's check) otherwise.
// Returns its wait status, or -1 when it had to be killed.
int wait_within(pid_t pid, std::chrono::milliseconds within) {
  const auto until = Steady::now() + within;
  int status = 0;
  while (Steady::now() < until) {
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(20ms);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

// Issue 40: `collie launch -np 1 --timeout 3s -- yes | (nobody reads)` ran past 20 s and ignored
// SIGTERM, blocked in a write from its only loop. The launcher's --timeout and signals must work
// whoever reads its output.
TEST(Launch, TimeoutAndSignalsWorkWhenNobodyReadsTheOutput) {
  for (const bool by_signal : {false, true}) {
    int unread[2];
    ASSERT_EQ(pipe(unread), 0);
    Capture err;
    const auto t0 = Steady::now();
    const pid_t launcher = fork();
    ASSERT_GE(launcher, 0);
    if (launcher == 0) {
      close(unread[0]);
      LaunchSpec s;
      s.argv = {"yes"};
      s.out_fd = unread[1];
      s.err_fd = err.fd();
      s.kill_grace = s.failure_grace = 500ms;
      if (!by_signal) s.timeout = 1s;
      _exit(run(s).exit_code);
    }
    close(unread[1]);  // the read end stays open and unread: a reader that went to sleep
    if (by_signal) {
      std::this_thread::sleep_for(1s);
      kill(launcher, SIGTERM);
    }
    const int st = wait_within(launcher, 10s);
    const double took = std::chrono::duration<double>(Steady::now() - t0).count();
    close(unread[0]);
    ASSERT_NE(st, -1) << (by_signal ? "SIGTERM" : "--timeout") << ": still running after 10 s\n"
                      << err.text();
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), by_signal ? 128 + SIGTERM : 124) << err.text();
    EXPECT_LT(took, 5) << err.text();
    EXPECT_NE(err.text().find("bytes of the ranks' output were not written"), std::string::npos)
        << err.text();
  }
}

// A reader that is only slow loses nothing: the rank waits for it (its pipe is not read while
// the launcher's queue is full), and every line arrives in order.
TEST(Launch, ASlowReaderGetsEveryLine) {
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  Capture err;
  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    close(out[0]);
    LaunchSpec s;
    s.argv = {"seq", "1", "1000000"};  // 6.9 MB: more than the launcher queues
    s.out_fd = out[1];
    s.err_fd = err.fd();
    _exit(run(s).exit_code);
  }
  close(out[1]);
  std::this_thread::sleep_for(1500ms);  // the rank fills the pipe and the queue, then waits
  std::string text;
  char buf[65536];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  close(out[0]);
  const int st = wait_within(launcher, 20s);
  ASSERT_TRUE(st != -1 && WIFEXITED(st)) << err.text();
  EXPECT_EQ(WEXITSTATUS(st), 0) << err.text();
  std::istringstream lines(text);
  std::string line;
  int want = 1;
  while (std::getline(lines, line) && line == "[0] " + std::to_string(want)) ++want;
  EXPECT_EQ(want, 1000001) << "line " << want << " is '" << line << "'";
}

// Issue 40: SIGHUP (a closed terminal, an ssh drop) and SIGQUIT killed the launcher outright:
// what a rank had started ran on under PID 1 and the store's secret file stayed behind. They
// now stop the job as SIGTERM does. A hangup ignored when the launcher started (nohup) stays
// ignored.
TEST(Launch, HangupAndQuitStopTheJobAndCleanUp) {
  for (const int sig : {SIGHUP, SIGQUIT}) {
    Capture out, err;
    uint16_t port = 0;
    ::close(net::listen_on("127.0.0.1", 0, &port));
    const pid_t launcher = fork();
    ASSERT_GE(launcher, 0);
    if (launcher == 0) {
      ::unsetenv(kStoreSecretEnv);
      LaunchSpec s = sh(1, "sleep 300 & echo $!; wait", out, err);
      s.master_port = port;
      s.announce_live = true;  // leaves the store secret file
      _exit(run(s).exit_code);
    }
    const auto deadline = Steady::now() + 10s;
    while (out.sorted_lines().empty() && Steady::now() < deadline)
      std::this_thread::sleep_for(20ms);
    ASSERT_EQ(out.sorted_lines().size(), 1u) << out.text() << err.text();
    const std::string line = out.sorted_lines()[0];
    const pid_t started = std::stoi(line.substr(line.find(' ') + 1));
    const std::string secret = local_secret_dir() + "/store-" + std::to_string(port) + ".secret";
    ASSERT_TRUE(std::filesystem::exists(secret)) << secret << "\n" << err.text();
    kill(launcher, sig);
    const int st = wait_within(launcher, 10s);
    ASSERT_NE(st, -1) << strsignal(sig);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 128 + sig)
        << strsignal(sig) << ": status " << st << "\n"
        << err.text();
    const auto until = Steady::now() + 5s;
    while (process_alive(started) && Steady::now() < until) std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(process_alive(started)) << "what the rank started outlived " << strsignal(sig);
    if (process_alive(started)) kill(started, SIGKILL);
    EXPECT_FALSE(std::filesystem::exists(secret)) << secret << " left by " << strsignal(sig);
  }
  // nohup: SIGHUP was ignored when the launcher started.
  Capture out, err;
  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    signal(SIGHUP, SIG_IGN);
    _exit(run(sh(1, "echo up; exec sleep 300", out, err)).exit_code);
  }
  const auto deadline = Steady::now() + 10s;
  while (out.sorted_lines().empty() && Steady::now() < deadline) std::this_thread::sleep_for(20ms);
  kill(launcher, SIGHUP);
  EXPECT_EQ(wait_within(launcher, 1s), -1) << "a launcher started under nohup ended on SIGHUP";
}

TEST(LineBuffer, SplitsOverlongLines) {
  Capture out;
  {
    OutputQueue q(out.fd());
    LineBuffer lb(q, "> ");
    lb.feed(std::string(LineBuffer::kMaxLine + 10, 'a'));
    lb.feed("b\nc");
    lb.flush();
    q.write_ready();
    EXPECT_FALSE(q.pending());
  }
  const std::string t = out.text();
  EXPECT_EQ(t, "> " + std::string(LineBuffer::kMaxLine, 'a') + "\n> " + std::string(10, 'a') +
                   "b\n> c\n");
}

// `collie launch` end to end: flags, -np, --, and the exit status.
TEST(LaunchCli, RunsTheCommandAndPropagatesTheStatus) {
  const std::string cli = COLLIE_CLI_PATH;
  auto run_cli = [&](const std::string& args) {
    const std::string cmd = cli + " " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string text;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) text.append(buf, n);
    const int st = pclose(p);
    return std::make_pair(WIFEXITED(st) ? WEXITSTATUS(st) : -1, text);
  };
  auto [rc, text] = run_cli("launch -np 2 --master-port 0 -- /bin/sh -c 'echo r=$RANK'");
  EXPECT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("[0] r=0"), std::string::npos) << text;
  EXPECT_NE(text.find("[1] r=1"), std::string::npos) << text;
  std::tie(rc, text) = run_cli("launch -np 2 --grace 200ms -- /bin/sh -c 'exit $((RANK + 3))'");
  EXPECT_TRUE(rc == 3 || rc == 4) << rc << text;
  std::tie(rc, text) = run_cli("launch -np 1 --timeout 200ms -- sleep 10");
  EXPECT_EQ(rc, 3) << text;  // kExitTimeout
  std::tie(rc, text) = run_cli("launch -np 2");
  EXPECT_EQ(rc, 2) << text;  // kExitUsage: no command
}

}  // namespace
}  // namespace collie::launch
