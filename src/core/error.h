#pragma once
// collie's exception hierarchy, mirroring torch.distributed's DistError family.
// Messages should name the rank, the op and its sequence number, the peer, and a next step.
#include <stdexcept>
#include <string>

namespace collie {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The communication library (Gloo, MPI, NCCL) reported a failure.
class BackendError : public Error {
 public:
  using Error::Error;
};
// A peer or the store could not be reached, or a connection broke.
class NetworkError : public Error {
 public:
  using Error::Error;
};
class StoreError : public Error {
 public:
  using Error::Error;
};
class TimeoutError : public Error {
 public:
  using Error::Error;
};
// Ranks called different collectives (DETAIL checks).
class DesyncError : public Error {
 public:
  using Error::Error;
};
// A device the run needs is missing or unusable: no CUDA driver, no visible device, a device
// index out of range, a feature the group's device lacks (-G on a host backend). The message is
// one line naming what is missing; the CLI exits 2 (like bad input: nothing was measured).
class DeviceError : public Error {
 public:
  using Error::Error;
};
// The caller passed something invalid: a bad flag, a buffer of the wrong size, an unknown dtype.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

}  // namespace collie
