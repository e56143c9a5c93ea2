#include "discovery/end_slurm_step.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "core/env.h"

namespace collie {
namespace {
// Task 0 reports the laggards before it exits, so it cancels at once; the others wait a little
// (in case task 0 is the one that hangs) so that task 0's report is not cut off.
constexpr unsigned kOtherTasksCancelDelaySeconds = 5;
}  // namespace

bool end_slurm_step_on_failure(const Env& env, int exit_code) {
  if (exit_code == 0 || exit_code == 2) return false;
  if (env.get("COLLIE_SLURM_CANCEL_ON_FAILURE").value_or("") == "0") return false;
  const auto job = env.first_of({"SLURM_JOB_ID", "SLURM_JOBID"});
  const auto step = env.first_of({"SLURM_STEP_ID", "SLURM_STEPID"});
  const auto tasks = env.first_of({"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"});
  if (!job || !step || !tasks || *tasks == "1") return false;
  const std::string id = *job + "." + *step;
  const bool task0 = env.get("SLURM_PROCID").value_or("") == "0";
  std::fprintf(stderr,
               "collie: this task failed (exit %d); cancelling Slurm step %s so that the other "
               "tasks stop too (COLLIE_SLURM_CANCEL_ON_FAILURE=0 to keep them)\n",
               exit_code, id.c_str());
  std::fflush(stderr);
  // Double fork: the grandchild, in its own session, outlives this task's exit; scancel's own
  // signal to this task then finds it gone.
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    if (fork() != 0) _exit(0);
    setsid();
    const int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, STDIN_FILENO);
      dup2(null, STDOUT_FILENO);
    }
    // Slurm cancels a step with SIGKILL: unless this is task 0 (which reports last), give task
    // 0 time to finish its report (it names the laggards within ~1.5 s of its own deadline).
    if (!task0) sleep(kOtherTasksCancelDelaySeconds);
    execlp("scancel", "scancel", "--quiet", id.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return true;
}

}  // namespace collie
