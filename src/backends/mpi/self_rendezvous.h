#pragma once
// Rendezvous for jobs started by mpirun/srun: rank and size come from MPI_COMM_WORLD and rank 0
// serves a TcpStore whose address it broadcasts over MPI, so the debug features that need a
// store (monitored barrier, debug-server addresses, dump requests) work with nothing set.
#include <optional>

#include "comm/registry.h"

namespace collie {

// nullopt when `env` shows no MPI launcher. The store listens on 127.0.0.1 when every rank is on
// this host, else on all interfaces; rank 0 broadcasts its non-loopback addresses (or
// COLLIE_MPI_STORE_HOST), the port and the job's store secret (COLLIE_STORE_SECRET, generated
// when unset, then set in every rank's environment); the others use the first address that
// answers. Also used by init_process_group for other backends under mpirun with nothing set.
// Throws BackendError if MPI cannot start, NetworkError if the store cannot be reached in time.
std::optional<SelfRendezvous> mpi_self_rendezvous(const Env& env, Millis timeout);

}  // namespace collie
