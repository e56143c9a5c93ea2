// Registers the "mpi" backend: its capability table, the Open MPI version and the self
// rendezvous used under mpirun.
#include "backends/mpi/mpi_runtime.h"
#include "backends/mpi/process_group_mpi.h"
#include "backends/mpi/self_rendezvous.h"
#include "comm/registry.h"
#include "core/env.h"

namespace collie {
namespace {

BackendRegistration registration() {
  BackendRegistration r;
  r.name = "mpi";
  r.create = [](const BackendArgs& a) {
    return std::make_shared<ProcessGroupMPI>(a.info, a.env ? *a.env : Env::process());
  };
  r.capabilities = ProcessGroupMPI::declared_capabilities();
  r.version = mpi_library_version();
  r.self_rendezvous = &mpi_self_rendezvous;
  return r;
}

const bool kRegistered = register_backend(registration());

}  // namespace
}  // namespace collie
