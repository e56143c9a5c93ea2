#include "probes/run_flags.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include "comm/launch_env.h"
#include "comm/registry.h"
#include "core/env.h"
#include "core/error.h"
#include "core/output_path.h"
#include "launch/launch.h"
#include "perf/options.h"

namespace collie::probes {

int launch_or_run(const RunFlags& f, const std::string& command,
                  const std::function<int(ProbeContext&)>& body,
                  const std::vector<std::pair<std::string, std::string>>& extra_outputs) {
  // The same checks, messages and meanings as `collie perf`'s flags.
  auto usage = [&](const std::string& what) {
    std::fprintf(stderr, "collie %s: error: %s\n", command.c_str(), what.c_str());
    return 2;
  };
  if (f.backend != "gloo" && f.backend != "mpi" && f.backend != "nccl")
    return usage("--backend must be gloo, mpi or nccl");
  // A backend that is not built or cannot run on this host (nccl without a CUDA driver) is one
  // line before any rank starts, unless the probe does not use it (env reads the host).
  if (f.uses_backend) {
    if (const std::string why = backend_unavailable_reason(f.backend); !why.empty())
      return usage(why);
  }
  if (f.timeout_s < 0) return usage("-T must be >= 0 seconds (0 = the default)");
  if (f.np < 1 || f.np > launch::kMaxLocalRanks)
    return usage(fmt::format("-np must be in 1..{}", launch::kMaxLocalRanks));
  if (f.debug_port < -1 || f.debug_port > 65535)
    return usage("--debug-port must be a port in 0..65535 (0 = ephemeral)");
  // Output paths are checked before any rank starts (rank 0 writes them after the run).
  try {
    check_output_file(f.json, "-J");
    for (const auto& [flag, path] : extra_outputs) check_output_file(path, flag);
  } catch (const InvalidArgument& e) {
    return usage(e.what());
  }
  // The debug server starts itself in every rank when this is set (debug_server/auto_start).
  if (f.debug_port >= 0) ::setenv("COLLIE_DEBUG_PORT", std::to_string(f.debug_port).c_str(), 1);
  const LaunchEnv le = detect_launch_env(Env::process());
  // Test-only hooks change what is measured: refused unless enabled, and always announced (once
  // per job, by rank 0; the launching process only refuses them).
  try {
    const perf::TestHooks hooks = perf::TestHooks::from_env(Env::process());
    if (!hooks.active.empty() && !le.source.empty() && le.rank.value_or(0) == 0)
      std::fprintf(stderr, "collie %s: %s\n", command.c_str(), hooks.warning().c_str());
  } catch (const InvalidArgument& e) {
    return usage(e.what());
  }
  const bool has_init = Env::process().get("COLLIE_INIT_METHOD").has_value();
  if (le.source.empty() && !has_init) {
    if (f.backend == "mpi")
      return usage(
          fmt::format("--backend mpi runs under mpirun: mpirun -np N collie {} ...", command));
    // As `collie perf`: rank 0's stdout is the report, unprefixed, whatever the launcher.
    launch::LaunchSpec spec;
    spec.nprocs = f.np;
    spec.argv = launch::self_argv();
    spec.prefix_output = false;
    const launch::LaunchResult r = launch::run(spec);
    return r.exit_code;
  }
  if (f.np_given && le.world_size && *le.world_size != f.np)
    return usage(
        fmt::format("-np {} but the {} launcher started {} ranks; drop -np under a "
                    "launcher",
                    f.np, le.source, *le.world_size));
  ContextOptions o;
  o.backend = f.backend;
  o.timeout = std::chrono::seconds(f.timeout_s > 0 ? f.timeout_s : kDefaultStepTimeoutS);
  ProbeContext ctx = make_context(o);
  return body(ctx);
}

}  // namespace collie::probes
