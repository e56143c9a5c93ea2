#include "probes/run_flags.h"

#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "comm/launch_env.h"
#include "core/env.h"
#include "core/error.h"
#include "launch/launch.h"

namespace collie::probes {
namespace {

std::vector<std::string> own_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string a;
  while (std::getline(in, a, '\0')) args.push_back(a);
  // argv[0] may be a bare name found through PATH; the children run this very binary.
  char exe[PATH_MAX] = {};
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0 && !args.empty()) args[0] = std::string(exe, static_cast<size_t>(n));
  return args;
}

}  // namespace

int launch_or_run(const RunFlags& f, const std::string& command,
                  const std::function<int(ProbeContext&)>& body) {
  if (f.timeout_s <= 0) {
    std::fprintf(stderr, "collie %s: error: -T must be > 0 seconds\n", command.c_str());
    return 2;
  }
  if (f.np < 1) {
    std::fprintf(stderr, "collie %s: error: -np must be >= 1\n", command.c_str());
    return 2;
  }
  // The debug server starts itself in every rank when this is set (debug_server/auto_start).
  if (f.debug_port >= 0) ::setenv("COLLIE_DEBUG_PORT", std::to_string(f.debug_port).c_str(), 1);
  const LaunchEnv le = detect_launch_env(Env::process());
  const bool has_init = Env::process().get("COLLIE_INIT_METHOD").has_value();
  if (le.source.empty() && !has_init) {
    if (f.backend == "mpi") {
      std::fprintf(
          stderr, "collie %s: error: --backend mpi runs under mpirun: mpirun -np N collie %s ...\n",
          command.c_str(), command.c_str());
      return 2;
    }
    launch::LaunchSpec spec;
    spec.nprocs = f.np;
    spec.argv = own_argv();
    spec.prefix_output = true;
    const launch::LaunchResult r = launch::run(spec);
    return r.exit_code;
  }
  if (f.np_given && le.world_size && *le.world_size != f.np) {
    std::fprintf(stderr,
                 "collie %s: error: -np %d but the %s launcher started %d ranks; drop -np under a "
                 "launcher\n",
                 command.c_str(), f.np, le.source.c_str(), *le.world_size);
    return 2;
  }
  ContextOptions o;
  o.backend = f.backend;
  o.timeout = std::chrono::seconds(f.timeout_s);
  ProbeContext ctx = make_context(o);
  return body(ctx);
}

}  // namespace collie::probes
