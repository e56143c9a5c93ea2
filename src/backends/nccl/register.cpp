// Registers the "nccl" backend: capability table (CUDA devices only) and the NCCL / CUDA
// versions it was built against.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include "backends/nccl/process_group_nccl.h"
#include "comm/registry.h"
#include "core/env.h"

namespace collie {
namespace {

BackendRegistration registration() {
  BackendRegistration r;
  r.name = "nccl";
  r.create = [](const BackendArgs& a) {
    return std::make_shared<ProcessGroupNCCL>(a.info, a.env ? *a.env : Env::process());
  };
  r.capabilities = ProcessGroupNCCL::declared_capabilities();
  r.unavailable_reason = cuda_unavailable_reason;
  r.version = fmt::format("NCCL {}.{}.{}, CUDA {}.{}", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH,
                          CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10);
  return r;
}

const bool kRegistered = register_backend(registration());

}  // namespace
}  // namespace collie
