#include "cli/run_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cli/rank_status.h"
#include "comm/registry.h"
#include "core/env.h"
#include "core/error.h"
#include "core/exit_codes.h"
#include "core/output_path.h"
#include "core/printable.h"
#include "debug/flight_recorder.h"
#include "debug_server/auto_start.h"
#include "discovery/launch_env.h"
#include "discovery/launcher_rendezvous.h"
#include "perf/options.h"
#include "probes/context.h"

namespace collie::cli {
namespace {

// Every backend name this build knows, sorted: the registered ones and those not built here
// (check_before_any_rank refuses those with the reason).
std::vector<std::string> known_backends() {
  std::vector<std::string> names;
  for (const auto* b : backends()) names.push_back(b->name);
  for (const auto& m : missing_backends()) names.push_back(m.name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// "a", "a or b", "a, b or c".
std::string or_list(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

// "srun -n N collie CMD ARGS" for this command line, without -np.
std::string srun_command(int ranks) {
  const std::vector<std::string> args = launch::self_argv();
  std::string out = fmt::format("srun -n {} collie", ranks);
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--np" || args[i] == "-np") {
      ++i;
      continue;
    }
    if (args[i].rfind("--np=", 0) == 0) continue;
    out += " " + args[i];
  }
  return out;
}

// Every check that needs no launcher decision; throws InvalidArgument.
void check_before_any_rank(const RunFlags& f, const RunCommand& c) {
  check_run_flags(f);
  // A backend that is not built, or cannot run on this host (nccl without a CUDA driver or
  // device), unless the command does not use it (probe env reads the host).
  if (f.uses_backend) {
    if (const std::string why = backend_unavailable_reason(f.backend); !why.empty())
      throw InvalidArgument(why);
  }
  // The files rank 0 writes (-J after every row and at the end, the command's others).
  check_output_file(f.json, "-J");
  for (const auto& [flag, path] : c.outputs) check_output_file(path, flag);
  if (c.more_checks) c.more_checks();
  // Test-only hooks change what is measured: refused unless enabled (perf/options.h).
  perf::TestHooks::from_env(Env::process());
  // What every rank sizes from the environment: refused here once, not by each rank.
  (void)FlightRecorder::capacity_from_env(Env::process());
}

int launch_local(const RunFlags& f, const RunCommand& c) {
  if (f.backend == "mpi")
    throw InvalidArgument(fmt::format(
        "--backend mpi runs under mpirun: mpirun -np N collie {} --backend mpi ...", c.name));
  if (auto job = Env::process().first_of({"SLURM_JOB_ID", "SLURM_JOBID"})) {
    // An sbatch script or salloc shell: the ranks belong in a job step on the nodes.
    throw InvalidArgument(
        fmt::format("inside Slurm job {} but not in a job step; run the ranks with srun: {}", *job,
                    srun_command(f.np)));
  }
  launch::LaunchSpec spec;
  spec.who = "collie " + c.name;  // its line when the ranks outnumber the cores
  spec.nprocs = f.np;
  spec.argv = launch::self_argv();  // with --debug-port: each rank gets it through argv
  spec.prefix_output = false;       // rank 0's stdout is the report, as nccl-tests prints it
  spec.kill_grace = c.stop_grace;
  spec.extra_env = c.extra_env;
  spec.bind = launch::parse_binding(f.bind);
  // Ranks with debug servers: the line that attaches `collie analyze --live` to them.
  spec.announce_live =
      f.debug_port >= 0 || !Env::process().get("COLLIE_DEBUG_PORT").value_or("").empty();
  // MASTER_ADDR/MASTER_PORT say where the local ranks meet, as for any launcher (a store port
  // the user chose, to attach `collie analyze --live` to); only one of them is refused
  // (plan_env_rendezvous's line, exit 2). COLLIE_INIT_METHOD, which the ranks inherit, wins.
  if (Env::process().get("COLLIE_INIT_METHOD").value_or("").empty()) {
    const RendezvousPlan plan = plan_env_rendezvous(Env::process());
    if (plan.kind == RendezvousPlan::Kind::Explicit) {
      spec.master_addr = plan.host;
      spec.master_port = plan.ports.front();
    }
  }
  // A failed check, REJECTED or an undecided verdict is printed by the rank: not a crash.
  spec.verdict_statuses = {kExitFailure, kExitWarn, kExitInconclusive};
  return launch::run(spec).exit_code;
}

}  // namespace

void add_run_flags(CLI::App& app, RunFlags& f, const std::string& timeout_help,
                   const std::string& json_help) {
  app.add_option("--np", f.np,
                 fmt::format("local ranks to start when not under a launcher (default {}; -np "
                             "works too)",
                             kDefaultLocalRanks))
      ->each([&f](const std::string&) { f.np_given = true; });
  app.add_option("--backend", f.backend, fmt::format("{}", fmt::join(known_backends(), " | ")));
  app.add_option("-T,--timeout", f.timeout, timeout_help);
  app.add_option("-J,--output_file", f.json, json_help);
  app.add_option("--debug-port", f.debug_port,
                 "start each rank's debug server on PORT + local rank (0 = ephemeral; "
                 "overrides $COLLIE_DEBUG_PORT)");
  app.add_option("--bind", f.bind,
                 "-np: auto binds each local rank to its own share of the CPUs, as mpirun does "
                 "(one CPU each, round-robin, when ranks outnumber them); none: not bound")
      ->check(CLI::IsMember({"auto", "none"}));
}

Millis run_timeout(const RunFlags& f) {
  try {
    return parse_duration(f.timeout);
  } catch (const InvalidArgument&) {
    throw InvalidArgument(fmt::format(
        "-T {} is not a timeout: give seconds (30, 0.5) or a duration (30s, 500ms, 5m); 0 = "
        "the default",
        quote(f.timeout)));
  }
}

void check_run_flags(const RunFlags& f) {
  if (const auto known = known_backends();
      std::find(known.begin(), known.end(), f.backend) == known.end())
    throw InvalidArgument("--backend must be " + or_list(known));
  run_timeout(f);
  if (f.np < 1 || f.np > launch::kMaxLocalRanks)
    throw InvalidArgument(fmt::format("-np must be in 1..{}", launch::kMaxLocalRanks));
  if (f.debug_port < -1 || f.debug_port > 65535)
    throw InvalidArgument("--debug-port must be a port in 0..65535 (0 = ephemeral)");
}

int launch_or_run(const RunFlags& f, const RunCommand& c, const std::function<int()>& run_rank) {
  check_before_any_rank(f, c);
  const LaunchEnv le = detect_launch_env(Env::process());
  if (le.source.empty()) return launch_local(f, c);
  if (f.np_given && le.world_size && *le.world_size != f.np)
    throw InvalidArgument(
        fmt::format("-np {} but the {} launcher started {} ranks; drop -np under a launcher", f.np,
                    le.source, *le.world_size));
  // Takes precedence over COLLIE_DEBUG_PORT; the server starts with the world group.
  if (f.debug_port >= 0) set_debug_port_override(f.debug_port);
  if (le.rank.value_or(0) == 0) {
    const perf::TestHooks hooks = perf::TestHooks::from_env(Env::process());
    if (!hooks.active.empty())
      std::fprintf(stderr, "collie %s: %s\n", c.name.c_str(), hooks.warning().c_str());
  }
  return run_rank();
}

int launch_or_run_probes(const RunFlags& f, const RunCommand& c,
                         const std::function<int(probes::ProbeContext&)>& body) {
  return launch_or_run(f, c, [&f, &body] {
    probes::ContextOptions o;
    o.backend = f.backend;
    if (const Millis t = run_timeout(f); t.count() > 0) o.timeout = t;
    probes::ProbeContext ctx = probes::make_context(o);
    return share_rank0_status(ctx, body(ctx));
  });
}

}  // namespace collie::cli
