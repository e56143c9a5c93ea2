#pragma once
// Under srun, a task that fails leaves the others running (or frozen) until the step ends, and
// srun ends it only with --kill-on-bad-exit. end_slurm_step_on_failure() asks Slurm to cancel
// this task's own step (`scancel --quiet JOB.STEP`, run in the background: at once from task 0,
// which reports the laggards before it exits, 5 s later from the others, so that task 0's
// report is not cut off unless task 0 itself hangs), so the whole step ends without special
// flags. This process exits at once either way.
// It does nothing outside a Slurm step, for a one-task step, for exit codes 0 and 2 (every task
// sees the same usage error itself), or when COLLIE_SLURM_CANCEL_ON_FAILURE=0.
// Thread safety: call once, right before the process exits; async-signal-unsafe (forks).
namespace collie {

class Env;

// Returns true when the cancel was started.
bool end_slurm_step_on_failure(const Env& env, int exit_code);

}  // namespace collie
