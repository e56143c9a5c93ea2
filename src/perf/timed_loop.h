#pragma once
// The timed part of one perf measurement, timed by the group's device runtime
// (device/device_runtime.h): a host runtime waits for every iteration (each op, or the -m batch)
// and reads the steady clock; a CUDA runtime enqueues the whole loop, marks an event after each
// iteration and waits once at the end, as nccl-tests does; -z waits for every op on both. With -G
// the loop is captured once into a CUDA graph and the graph launched N times.
// Every rank of `pg` must make the same calls. Thread safety: the group's submitting thread.
#include <vector>

#include "perf/collective.h"

namespace collie::perf {

struct LoopSettings {
  int iters = 20;
  int agg_iters = 1;                  // -m
  bool blocking = false;              // -z
  int64_t delay_us = 0;               // test hook: sleep before every call (0 = none)
  int64_t work_units = 0;             // test hook: CPU work before every call (0 = none)
  int graph_launches = 0;             // -G (0 = no graph)
  Millis timeout = kUseGroupTimeout;  // bounds the barrier between capture and launches
  // -I: time each iteration's wait on the host (LoopTiming::wait_us). Only where the host waits
  // for every iteration (a host runtime without -G); elsewhere wait_us stays empty.
  bool arrivals = false;
};

struct LoopTiming {
  double avg_us = 0;            // per call: loop time / (iters x agg [x launches])
  std::vector<double> iter_us;  // per iteration, divided by agg; with -G all the average
  // With LoopSettings::arrivals: per iteration, from entering its first call (after the test
  // hook's delay) to its completion, whole (not divided by agg). reports/arrival.h turns every
  // rank's waits into who arrived last.
  std::vector<double> wait_us;
};

// REQUIRES: the ranks are in step (the caller's barrier precedes the loop). With graph_launches
// > 0 the group's runtime must support graphs (DeviceError otherwise).
LoopTiming time_loop(ProcessGroup& pg, const CollectiveDescriptor& d, CallArgs args,
                     const LoopSettings& s);

}  // namespace collie::perf
