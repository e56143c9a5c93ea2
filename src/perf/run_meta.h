#pragma once
// The run's metadata (reports::RunMeta): every rank's host name, pid and device, exchanged in one
// all_gather, plus the backend, world size, library versions and the start time.
// A collective call: every rank of `pg` must call fill_run_meta once, at the same point. Runs on
// the caller's thread. PRECONDITION: `m` has no hosts/devices yet (they are appended).
#include <string>
#include <vector>

#include "comm/process_group.h"
#include "device/device_runtime.h"
#include "reports/result.h"

namespace collie::perf {

// Fills `m` on every rank and returns every rank's pid (rank order). The exchange is bounded by
// `timeout`.
std::vector<int> fill_run_meta(ProcessGroup& pg, device::DeviceRuntime& dev, Millis timeout,
                               const std::string& version, reports::RunMeta& m);

// The current UTC time as "2026-01-31T12:00:00Z" (RunMeta started_at / finished_at).
std::string now_iso8601();

}  // namespace collie::perf
