#pragma once
// collie's exception hierarchy, mirroring torch.distributed's DistError family.
// Messages should name the rank, the op and its sequence number, the peer, and a next step.
#include <stdexcept>
#include <string>

#include "core/export.h"

namespace collie {

class COLLIE_API Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The communication library (Gloo, MPI, NCCL) reported a failure.
class COLLIE_API BackendError : public Error {
 public:
  using Error::Error;
};
// A peer or the store could not be reached, or a connection broke.
class COLLIE_API NetworkError : public Error {
 public:
  using Error::Error;
};
class COLLIE_API StoreError : public Error {
 public:
  using Error::Error;
};
class COLLIE_API TimeoutError : public Error {
 public:
  using Error::Error;
};
// Ranks called different collectives (DETAIL checks).
class COLLIE_API DesyncError : public Error {
 public:
  using Error::Error;
};
// A device the run needs is missing or unusable: no CUDA driver, no visible device, a device
// index out of range, a feature the group's device lacks (-G on a host backend). The message is
// one line naming what is missing; the CLI exits 2 (like bad input: nothing was measured).
class COLLIE_API DeviceError : public Error {
 public:
  using Error::Error;
};
// The caller passed something invalid: a bad flag, a buffer of the wrong size, an unknown dtype.
class COLLIE_API InvalidArgument : public Error {
 public:
  using Error::Error;
};

}  // namespace collie
