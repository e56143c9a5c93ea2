#pragma once
// The process's open-files limit (RLIMIT_NOFILE), which a job of N ranks outgrows long before
// anything else: the store host holds one connection per rank, Gloo one socket per peer. Most
// systems start processes at a soft limit of 1,024 with a much higher hard limit, so collie
// raises the soft limit to the hard one once, at start (as NCCL and PyTorch's launcher do), and
// checks before rendezvous that what a step needs fits, saying so in one line when it does not.
// Thread-safe (the raise happens once per process; the checks only read).
#include <cstdint>
#include <string>

#include "core/export.h"

namespace collie {

struct FdLimit {
  uint64_t soft = 0;  // what the process may open now
  uint64_t hard = 0;  // what the soft limit may be raised to without privileges
};

// Raises the soft limit to the hard limit (once per process; later calls only read). Returns
// the limits as they are afterwards. Never throws; a refused raise leaves the limit as it was.
COLLIE_API FdLimit raise_fd_limit();

// Descriptors open in this process now (counted in /proc/self/fd; 0 when unknown).
COLLIE_API uint64_t open_fds();

// Throws InvalidArgument in one line when `more` descriptors on top of those open now do not
// fit the (raised) soft limit: "[what] needs about N open files but the limit is L (hard H);
// raise it ...". `what` names the step and its size ("rank 0 serves the store for 16384 ranks").
COLLIE_API void require_fds(uint64_t more, const std::string& what);

}  // namespace collie
