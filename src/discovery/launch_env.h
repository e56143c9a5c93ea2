#pragma once
// Detects rank / world size / local rank from the launcher's environment:
//   torchrun and `collie launch`: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE
//   Open MPI: OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE
//   MPICH / PMI: PMI_RANK, PMI_SIZE (MPI_LOCALRANKID)
//   Slurm: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, only inside a job step (SLURM_STEP_ID set;
//          an sbatch script or salloc shell is not a task of the job)
// Sources that are present must agree; a contradiction or a rank outside the world throws
// InvalidArgument with a one-line explanation. Thread-safe (pure function of env).
#include <optional>
#include <string>

namespace collie {

class Env;

struct LaunchEnv {
  std::optional<int> rank;
  std::optional<int> world_size;
  std::optional<int> local_rank;
  std::optional<int> local_world_size;
  std::string source;  // "env", "openmpi", "pmi", "slurm", or "" when nothing was found
};

LaunchEnv detect_launch_env(const Env& env);

}  // namespace collie
