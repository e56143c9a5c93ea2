#pragma once
// Translating Gloo's exceptions into collie's error types with the context users need:
//   gloo::IoException with a timeout          -> TimeoutError
//   gloo::IoException otherwise               -> NetworkError (a peer died or a socket broke)
//   gloo::EnforceNotMet / gloo::Exception     -> BackendError
// collie::Error subclasses pass through unchanged. Thread-safe (no state).
#include <exception>
#include <string>

#include "comm/op.h"

namespace collie {

struct GlooErrorContext {
  int rank = -1;
  OpType op = OpType::Barrier;
  uint64_t seq = 0;
  int peer = -1;      // group rank of the peer when known (p2p), else -1
  std::string group;  // "group 0 'default_pg'"
  Millis timeout{0};
};

// True when a Gloo message reports a timeout ("Timed out", "Connect timeout", ...).
bool looks_like_gloo_timeout(const std::string& what);

// Returns the collie exception for `error` (which must be non-null).
std::exception_ptr translate_gloo_error(const GlooErrorContext& ctx, std::exception_ptr error);

}  // namespace collie
