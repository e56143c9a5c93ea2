#pragma once
// Backend registry. Each backend registers itself from its own register.cpp (a static
// registrar; all modules are linked into libcollie, so registrars are never dropped): backends are
// optional, so the registry is how the rest of collie learns which ones this build has. Nothing
// else registers: the wrapper stack is built by src/stack (build_stack), which
// init_process_group and new_group (src/stack/init.h) call directly.
// Thread safety: registration happens during static initialization; lookups are read-only.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/process_group.h"
#include "core/export.h"

namespace collie {

class Env;

struct BackendArgs {
  GroupInfo info;
  const Env* env = nullptr;
};

// What a backend that finds its own peers (MPI under mpirun) reports instead of a store-based
// rendezvous: its rank, size and a store it built.
struct SelfRendezvous {
  int rank = 0;
  int world_size = 1;
  std::shared_ptr<Store> store;
  std::string store_host;  // host the other ranks dial for the store
};

struct BackendRegistration {
  std::string name;
  std::function<std::shared_ptr<ProcessGroup>(const BackendArgs&)> create;
  Capabilities capabilities;
  std::string version;  // library version found at build time, e.g. "gloo 0.0~git20220518"
  // Optional: rendezvous without an init method (returns nullopt when not applicable).
  std::function<std::optional<SelfRendezvous>(const Env&, Millis timeout)> self_rendezvous;
  // Optional: one line saying why this backend cannot run on this host (e.g. "no CUDA driver:
  // ..."), empty when it can. Tools ask it before launching ranks so the user gets one line.
  std::function<std::string()> unavailable_reason;
};

// A backend this build does not have, and why ("not built: CUDA toolkit not found").
struct MissingBackend {
  std::string name;
  std::string reason;
};

// False, and nothing changes, when a backend of that name is already registered.
COLLIE_API bool register_backend(BackendRegistration reg);
COLLIE_API bool register_missing_backend(MissingBackend m);

COLLIE_API const BackendRegistration* find_backend(const std::string& name);
COLLIE_API std::vector<const BackendRegistration*> backends();
COLLIE_API std::vector<MissingBackend> missing_backends();
// One line when backend `name` is known but cannot run here — not built ("backend 'nccl' is not
// available in this build: ...") or its unavailable_reason() — else empty (also for unknown
// names, which init_process_group reports with the list of built backends).
COLLIE_API std::string backend_unavailable_reason(const std::string& name);

}  // namespace collie
