#pragma once
// -M: every rank's memory as its device runtime sees it (device/device_runtime.h MemoryReport),
// printed after a collective's table. Two halves: gather_memory() is the exchange (a collective
// call: every rank of `pg` must make it at the same point, on the group's submitting thread);
// memory_report_lines() is the pure formatting (no I/O, no shared state: safe from any thread).
// The driver calls both and hands the lines to its ResultSink on rank 0.
#include <string>
#include <vector>

#include "comm/process_group.h"
#include "device/device_runtime.h"

namespace collie::perf {

// Every rank's dev.memory(), rank order (one all_gather, bounded by `timeout`). Byte counts travel
// as doubles: exact below 2^53 bytes.
std::vector<device::MemoryReport> gather_memory(ProcessGroup& pg, device::DeviceRuntime& dev,
                                                Millis timeout);

// One line per rank, rank order:
// "#  Rank  0 memory: peak 4.0 KiB in perf buffers; host 1024.0 MiB total, 512.0 MiB free".
// Sizes below 1 MiB in KiB, else MiB, one decimal; an unknown (-1) size reads "?".
// `host_accessible` (the printing rank's runtime) names the memory "host" or "device" on every
// line.
std::vector<std::string> memory_report_lines(const std::vector<device::MemoryReport>& ranks,
                                             bool host_accessible);

}  // namespace collie::perf
