// `collie launch -np N [--master-addr A] [--master-port P] [--timeout T] -- CMD ARGS...`:
// runs N local ranks of CMD (see launch/launch.h for the environment and failure handling).
#include <algorithm>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/env.h"
#include "launch/launch.h"

namespace collie::cli {
namespace {

struct LaunchFlags {
  int np = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string timeout;  // "" = no limit
  std::string grace = "3s";
  bool no_prefix = false;
  std::string bind = "auto";
  std::vector<std::string> command;
};

const Command kCommand{
    "launch", "run N local ranks of a command with RANK/WORLD_SIZE/MASTER_* set",
    [](CLI::App& sub) {
      auto f = std::make_shared<LaunchFlags>();
      sub.add_option("--np", f->np, "number of ranks (-np works too)")
          ->required()
          ->check(CLI::Range(1, launch::kMaxLocalRanks));
      sub.add_option("--master-addr", f->master_addr, "MASTER_ADDR given to the ranks")
          ->capture_default_str();
      sub.add_option("--master-port", f->master_port, "MASTER_PORT (0 = pick a free port)")
          ->check(CLI::Range(0, 65535))
          ->capture_default_str();
      sub.add_option("--timeout", f->timeout,
                     "stop every rank after this long (30s, 10m, ...; default: no limit)");
      sub.add_option("--grace", f->grace,
                     "SIGTERM to SIGKILL delay after Ctrl-C (a failed rank stops the others "
                     "within min(3s, this))")
          ->capture_default_str();
      sub.add_flag("--no-prefix", f->no_prefix, "do not prefix output lines with [rank]");
      sub.add_option("--bind", f->bind,
                     "auto: each rank on its own share of the CPUs (one CPU each, round-robin, "
                     "when ranks outnumber them), as mpirun binds; none: not bound")
          ->capture_default_str();
      sub.add_option("command", f->command, "command and arguments, after --")->required();
      sub.footer("Example: collie launch -np 4 -- ./my_app --size 1M");
      return [f] {
        launch::LaunchSpec spec;
        spec.nprocs = f->np;
        spec.argv = f->command;
        spec.master_addr = f->master_addr;
        spec.master_port = static_cast<uint16_t>(f->master_port);
        if (!f->timeout.empty()) spec.timeout = parse_duration(f->timeout);
        spec.kill_grace = parse_duration(f->grace);
        spec.failure_grace = std::min(spec.failure_grace, spec.kill_grace);
        spec.prefix_output = !f->no_prefix;
        spec.bind = launch::parse_binding(f->bind);
        // Ranks calling init_process_group start their debug servers from COLLIE_DEBUG_PORT.
        spec.announce_live = !Env::process().get("COLLIE_DEBUG_PORT").value_or("").empty();
        const launch::LaunchResult r = launch::run(spec);
        return r.timed_out && r.signal == 0 ? kExitTimeout : r.exit_code;
      };
    }};

}  // namespace

const Command& launch_command() { return kCommand; }

}  // namespace collie::cli
