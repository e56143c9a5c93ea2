#pragma once
// The COLLIE_PERF_TEST_STALL and COLLIE_PERF_TEST_CORRUPT hooks (options.h TestHooks, read from
// the environment; see README.md) applied inside a measurement. Each call touches only its own
// arguments (and, for the stall, the file system): safe from any thread. With no hook active for
// `rank` both return at once and change nothing. (COLLIE_PERF_TEST_DELAY_US and _WORK are
// applied by the timed loop, timed_loop.h.)
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/timeout.h"
#include "perf/options.h"
#include "perf/step_tracker.h"

namespace collie::perf {

// COLLIE_PERF_TEST_STALL: a real stall (this rank stays out of the row's collectives while the
// file exists), bounded by `timeout` like any other wait. Checks in as "<what>: test stall".
void stall_if_asked(const TestHooks& h, int rank, Millis timeout, StepTracker& steps,
                    const std::string& what);

// COLLIE_PERF_TEST_WORK (and the stragglers probe's `work`): fixed CPU work, not a fixed time,
// so a rank whose core is busy with something else takes longer. Owns its scratch buffer
// (allocated once, so run() allocates nothing); one per thread.
class CpuWork {
 public:
  CpuWork();
  // `units` passes over the buffer; returns a value to keep the work from being optimised away.
  float run(int64_t units);

 private:
  std::vector<float> buf_;
};

// COLLIE_PERF_TEST_CORRUPT: flips the low byte of element h.corrupt_offset of `got` (the host
// copy of this rank's result, `checked` elements of dt) when it is one of the checked elements.
void corrupt_if_asked(const TestHooks& h, int rank, char* got, DType dt, size_t checked);

}  // namespace collie::perf
