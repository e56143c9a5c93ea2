// Registers a backend this build does not have, with the reason CMake found. Compiled once per
// missing backend by that backend's CMakeLists.txt, which defines COLLIE_MISSING_BACKEND and
// COLLIE_MISSING_REASON.
#include "comm/registry.h"

namespace collie {
namespace {
const bool kRegistered = register_missing_backend(
    MissingBackend{COLLIE_MISSING_BACKEND, "not built: " COLLIE_MISSING_REASON});
}  // namespace
}  // namespace collie
