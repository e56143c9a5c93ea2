#pragma once
// Where an env:// rendezvous meets when the user set nothing, decided from the launcher's own
// variables (a pure function of the environment, unit-tested from a map):
//   MASTER_ADDR + MASTER_PORT (torchrun, collie launch, by hand) -> that store; under torchrun's
//     agent store (TORCHELASTIC_USE_AGENT_STORE=True, MASTER_PORT is taken by torch's own store)
//     collie's store goes on the next free port after MASTER_PORT, found like a Slurm step's;
//   a Slurm job step (SLURM_STEP_ID set) -> the first host of SLURM_STEP_NODELIST (hostlist
//     expanded), on a port derived from the job and step ids with fallbacks when it is taken;
//     the step's first task on that host serves the store;
//   Open MPI / PMIx (OMPI_COMM_WORLD_SIZE, PMIX_RANK) -> bootstrap over MPI (rank 0 serves the
//     store and broadcasts its address; see backends/mpi/self_rendezvous.h);
//   a Slurm allocation outside a step (sbatch body, salloc shell) -> nothing: the ranks must be
//     started with srun (reason says so).
// Thread safety: pure, thread-safe.
#include <cstdint>
#include <string>
#include <vector>

namespace collie {

class Env;

struct RendezvousPlan {
  // SlurmStep and TorchrunAgent: a store on the first free candidate port, found by probing.
  enum class Kind { Explicit, SlurmStep, TorchrunAgent, Mpi, SlurmAllocation, None };
  Kind kind = Kind::None;
  std::string host;             // Explicit, SlurmStep: the store's host as the ranks dial it
  std::vector<uint16_t> ports;  // Explicit: one; SlurmStep: candidates, tried in order
  bool serve = false;           // SlurmStep: this process serves the store
  std::string id;               // SlurmStep: "slurm step JOB.STEP", TorchrunAgent: "torchrun RUN",
                                // written into the store to recognise it
  std::string reason;           // what decided, for logs and errors
};

// Throws InvalidArgument (one line naming the variables) on contradictory or malformed settings:
// only one of MASTER_ADDR/MASTER_PORT, a bad port, a malformed SLURM_STEP_NODELIST.
RendezvousPlan plan_env_rendezvous(const Env& env);

// Candidate store ports of Slurm step JOB.STEP: deterministic in 20000-59999, distinct.
std::vector<uint16_t> slurm_step_ports(long long job, long long step, int count = 8);

}  // namespace collie
