#include "discovery/launch_env.h"

#include <fmt/format.h>

#include "core/env.h"
#include "core/error.h"

namespace collie {
namespace {

struct Source {
  const char* name;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};

constexpr Source kSources[] = {
    {"env", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
};

std::optional<int> get(const Env& env, const char* name) {
  auto v = env.get_int(name);
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

}  // namespace

LaunchEnv detect_launch_env(const Env& env) {
  LaunchEnv out;
  for (const auto& s : kSources) {
    auto rank = get(env, s.rank);
    auto size = get(env, s.size);
    if (!rank && !size) continue;
    // An sbatch script or salloc shell carries SLURM_PROCID/SLURM_NTASKS of the allocation but is
    // not one of its tasks: only a job step (srun) is.
    if (std::string(s.name) == "slurm" && !env.first_of({"SLURM_STEP_ID", "SLURM_STEPID"}))
      continue;
    if (out.source.empty()) {
      out.rank = rank;
      out.world_size = size;
      out.local_rank = get(env, s.local_rank);
      // SLURM_NTASKS_PER_NODE may read "4(x2)"; only trust plain integers.
      try {
        out.local_world_size = get(env, s.local_size);
      } catch (const InvalidArgument&) {
      }
      out.source = s.name;
      continue;
    }
    // Slurm variables often leak into an mpirun/torchrun job of a different shape: only the
    // first source decides, but a direct contradiction between RANK and the MPI launcher is an
    // error the user must resolve.
    if (out.source == "env" && std::string(s.name) != "slurm") {
      if ((rank && out.rank && *rank != *out.rank) ||
          (size && out.world_size && *size != *out.world_size)) {
        throw InvalidArgument(
            fmt::format("RANK/WORLD_SIZE ({}/{}) contradict {} ({}={}, {}={}); unset one of them",
                        out.rank.value_or(-1), out.world_size.value_or(-1), s.name, s.rank,
                        rank.value_or(-1), s.size, size.value_or(-1)));
      }
    }
  }
  if (out.world_size && *out.world_size <= 0) {
    throw InvalidArgument(
        fmt::format("world size {} from {} must be positive", *out.world_size, out.source));
  }
  if (out.rank && out.world_size && (*out.rank < 0 || *out.rank >= *out.world_size)) {
    throw InvalidArgument(fmt::format("rank {} from {} is outside world size {}", *out.rank,
                                      out.source, *out.world_size));
  }
  return out;
}

}  // namespace collie
