#pragma once
// The launch and output flags of `collie perf`, `collie probe` and `collie accept` (-np,
// --backend, -T, -J, --debug-port), their one validator, and the one place that decides between
// starting local ranks of this same command line (no launcher found) and running as a launched
// rank (collie launch, torchrun, mpirun, srun, or plain RANK/WORLD_SIZE variables).
#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/timeout.h"
#include "launch/launch.h"

namespace collie::probes {
struct ProbeContext;
}

namespace collie::cli {

inline constexpr int kDefaultLocalRanks = 4;

struct RunFlags {
  int np = kDefaultLocalRanks;  // local ranks to start when no launcher is found
  bool np_given = false;        // set by the parser (add_run_flags)
  std::string backend = "gloo";
  // False for a command that creates no group of the backend (probe env): no availability check.
  bool uses_backend = true;
  // -T as given: seconds ("30", "0.5") or a duration ("30s", "500ms", "5m"); "0" = the
  // command's default. run_timeout() reads it.
  std::string timeout = "0";
  std::string json;           // -J: results JSON (rank 0)
  int debug_port = -1;        // --debug-port: per-rank debug server base port (-1 = off)
  std::string bind = "auto";  // --bind: CPU binding of the local ranks (-np; launch/cpu_binding.h)
};

// What the commands using launch_or_run differ in.
struct RunCommand {
  explicit RunCommand(std::string command,
                      std::vector<std::pair<std::string, std::string>> more_outputs = {})
      : name(std::move(command)), outputs(std::move(more_outputs)) {}

  std::string name;  // "perf", "probe", "accept": in messages and suggested command lines
  // Further files rank 0 writes, {flag, path} ("" = not asked for): checked with -J before any
  // rank starts.
  std::vector<std::pair<std::string, std::string>> outputs;
  // The command's own checks of its flags, run with the checks above before any rank starts
  // (throw InvalidArgument); empty = none.
  std::function<void()> more_checks;
  // Local ranks only: SIGTERM → SIGKILL delay after a Ctrl-C/SIGTERM forwarded to them. Perf's
  // ranks stop cleanly at the end of the row they are in and write their results, which can
  // take a large row a while; the probes have no clean stop and get the launcher's default.
  Millis stop_grace = launch::LaunchSpec{}.kill_grace;
  std::map<std::string, std::string> extra_env;  // set in every local rank
};

// -T as milliseconds (0 = the command's default). Throws InvalidArgument naming -T.
Millis run_timeout(const RunFlags& f);

// Adds --np (-np), --backend, -T/--timeout, -J/--output_file, --debug-port and --bind to `app`.
void add_run_flags(CLI::App& app, RunFlags& f, const std::string& timeout_help,
                   const std::string& json_help);

// The one validator of the flags above: throws InvalidArgument, one line naming the flag
// (--backend not a backend this build knows: registered, or not built here; -T not a duration,
// -np outside 1..4096, --debug-port outside 0..65535).
void check_run_flags(const RunFlags& f);

// Checks the flags (check_run_flags), the backend (built and able to run on this host, when
// uses_backend), the output files (-J and c.outputs) and the test-only hooks (perf/options.h);
// then, with no launcher in the environment, starts f.np local ranks of this command line
// (unprefixed output: rank 0's stdout is the report) and returns the first failing rank's
// status. Under a launcher it refuses an -np that contradicts the launcher's world, starts the
// rank's debug server on --debug-port (+ local rank), announces active test hooks once (rank
// 0), and returns run_rank(). COLLIE_INIT_METHOD names where ranks meet, not how many there are:
// it does not make this process a rank (local ranks inherit it). Throws InvalidArgument (exit 2,
// one line) before any rank starts for: bad flags, an unusable backend or output path, a refused
// test hook, --backend mpi without mpirun, or a Slurm allocation outside a job step (the srun
// line to use instead is in the message).
int launch_or_run(const RunFlags& f, const RunCommand& c, const std::function<int()>& run_rank);

// launch_or_run for the probes: the rank builds the probes' context (f.backend; -T, 10 s when 0,
// bounding every step) and hands it to `body`, whose status on rank 0 becomes every rank's exit
// status (share_rank0_status, cli/rank_status.h): any launcher reports rank 0's verdict.
int launch_or_run_probes(const RunFlags& f, const RunCommand& c,
                         const std::function<int(probes::ProbeContext&)>& body);

}  // namespace collie::cli
