#pragma once
// Local multi-process launcher (`collie launch`, and `collie perf -np N` relaunching itself).
// run() starts nprocs copies of argv, each in its own process group, with
//   RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, and
//   COLLIE_STORE_SECRET (the launcher's own COLLIE_STORE_SECRET when set, else 32 random bytes
//   from /dev/urandom as hex, new for every run(); the rank-0 TcpStore then refuses clients
//   without it; extra_env may override it)
// set (and other launchers' rank variables — Open MPI, PMI, Slurm — removed, since the children
// form a new world). Child stdin is /dev/null; child stdout/stderr go through pipes and are written
// line by line to out_fd/err_fd, prefixed "[rank] " unless prefix_output is false, through queues
// that never block the launcher (output_queue.h: a reader that does not keep up makes the ranks
// wait in their writes; once the job must end, what nobody read is dropped, and said).
// SIGINT/SIGTERM received by the launcher are forwarded to every child; SIGHUP and SIGQUIT (unless
// ignored when run() began, as under nohup) send every child SIGTERM. When a rank exits non-zero
// (or is killed), the others get SIGTERM at once, then SIGKILL after failure_grace; run() returns
// that first rank's status. Forwarded user signals get kill_grace instead. A status listed in
// verdict_statuses is not a failure but the rank's answer (it said so itself): the launcher
// prints nothing and lets the other ranks finish.
// Ranks are killed if the launcher process dies (PR_SET_PDEATHSIG). Each rank is bound to its
// share of the CPUs this process may use (`bind`, launch/cpu_binding.h), as mpirun binds; with
// more ranks than CPUs the launcher also says so on err_fd, in one line.
// Thread safety: run() installs SIGINT/SIGTERM/SIGCHLD/SIGHUP/SIGQUIT handlers for its duration
// and restores the old ones; only one run() may be active per process. It never waits forever
// when timeout is set, whoever reads its output; without one it waits as long as the children
// run and their output is read (like mpirun in a pipeline).
#include <unistd.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/timeout.h"
#include "launch/cpu_binding.h"

namespace collie::launch {

// The most local ranks `collie launch`, and perf/probe/accept -np, start on one host.
inline constexpr int kMaxLocalRanks = 4096;

struct LaunchSpec {
  int nprocs = 1;                 // REQUIRES: >= 1
  std::vector<std::string> argv;  // REQUIRES: non-empty; argv[0] is looked up in PATH
  std::string master_addr = "127.0.0.1";
  uint16_t master_port = 0;                    // 0 = a free port on master_addr
  Millis timeout{0};                           // whole job; 0 = no limit
  Millis kill_grace{std::chrono::seconds(3)};  // SIGTERM → SIGKILL delay after the user's
                                               // SIGINT/SIGTERM (forwarded to the ranks)
  // SIGTERM → SIGKILL delay when a rank failed or the job ran past `timeout`: short, so a frozen
  // or wedged rank cannot hold the job (the others have written their dumps by then).
  Millis failure_grace{std::chrono::seconds(3)};
  bool prefix_output = true;
  std::string who = "collie launch";  // starts each of the launcher's own lines ("collie perf")
  Binding bind = Binding::Auto;
  // Statuses a rank exits with after printing its own verdict (collie perf's failed check,
  // accept's REJECTED): no "rank N exited" line and the others are not stopped; those still
  // running verdict_grace later are (with a line saying so). The job's status is the first
  // verdict unless a rank then fails. Empty = every non-zero status is a failure.
  std::vector<int> verdict_statuses;
  Millis verdict_grace{std::chrono::seconds(10)};
  // The ranks start debug servers (--debug-port, COLLIE_DEBUG_PORT): before they start, say on
  // err_fd the line that attaches to them, "<who>: to see where the ranks are, from another
  // shell: collie analyze --live ADDR:PORT", and leave a secret this launcher made where that
  // command finds it (store/local_secret.h; removed when run() returns). A secret the user
  // exported is theirs: nothing is written and the line says to use it.
  bool announce_live = false;
  std::map<std::string, std::string> extra_env;  // set in every child
  int out_fd = STDOUT_FILENO;
  int err_fd = STDERR_FILENO;
};

struct LaunchResult {
  // 0 when every rank exited 0; else the first failing rank's exit status (128 + signal when
  // it was killed), or 128 + signal when the launcher itself was interrupted, or the first
  // verdict status when nothing failed.
  int exit_code = 0;
  int failed_rank = -1;  // first rank that failed, -1 if none
  bool timed_out = false;
  int signal = 0;            // the signal that interrupted the launcher, 0 if none
  uint16_t master_port = 0;  // the port handed to the children
};

// Throws InvalidArgument for a bad spec, NetworkError when no free port can be found.
LaunchResult run(const LaunchSpec& spec);

// This process's own command line, with argv[0] replaced by the path of the running executable
// (argv[0] may be a bare name found through PATH): what a command that relaunches itself as
// local ranks (`collie perf -np N`, `collie probe -np N`) hands to run(). Linux (/proc/self).
std::vector<std::string> self_argv();

}  // namespace collie::launch
