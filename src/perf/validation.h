#pragma once
// The validation loop of one measurement: for each of `check_iters` calls, init the send data
// (descriptor's init), run the collective, fill the expected result (descriptor's expected) and
// compare. Data is generated and checked on the host and copied once each way, outside the timed
// loop (on a host runtime the copies are memmoves). Applies the COLLIE_PERF_TEST_CORRUPT hook.
//
// A collective call: every rank of the group must call it for the same row. Runs on the caller's
// thread; not for concurrent use on one group. PRECONDITIONS: `args` views are the driver's
// buffers for this layout on `dev` (args.device == &dev), check_iters >= 1, and the row is
// checkable (not latency_only, not in place with in_place_unchecked).
#include <cstdint>

#include "comm/process_group.h"
#include "device/device_runtime.h"
#include "perf/collective.h"
#include "perf/options.h"

namespace collie::perf {

struct CheckCounts {
  int64_t wrong = 0;         // wrong elements over every validation call
  int64_t first_wrong = -1;  // element offset of the first wrong one in the first call with any
};

CheckCounts validate(ProcessGroup& pg, device::DeviceRuntime& dev, const CollectiveDescriptor& d,
                     const CallArgs& args, const DataSpec& spec, const Layout& l, int check_iters,
                     const TestHooks& hooks);

}  // namespace collie::perf
