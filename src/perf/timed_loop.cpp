#include "perf/timed_loop.h"

#include <chrono>
#include <memory>
#include <thread>

#include "perf/test_hooks.h"

namespace collie::perf {
namespace {

// nccl-tests: time per op = elapsed / (iters x agg x launches). Per-iteration samples are that
// average: a graph replays as one unit.
LoopTiming time_graph(ProcessGroup& pg, const CollectiveDescriptor& d, CallArgs args,
                      const LoopSettings& s) {
  device::DeviceRuntime& dev = pg.device_runtime();
  args.async_op = true;
  dev.begin_capture();
  std::unique_ptr<device::CapturedGraph> graph;
  try {
    for (int it = 0; it < s.iters; ++it)
      for (int m = 0; m < s.agg_iters; ++m) d.run(pg, args);  // captured Works are complete
  } catch (...) {
    try {
      dev.end_capture();
    } catch (...) {  // the first error is the one to report
    }
    throw;
  }
  graph = dev.end_capture();
  BarrierOptions bo;
  bo.timeout = s.timeout;
  bo.in_metrics = false;
  pg.barrier(bo)->wait();
  const std::unique_ptr<device::Timer> timer = dev.timer();
  timer->mark();
  for (int g = 0; g < s.graph_launches; ++g) graph->launch();
  timer->mark();
  LoopTiming t;
  const double calls = static_cast<double>(s.iters) * s.agg_iters * s.graph_launches;
  t.avg_us = calls > 0 ? timer->elapsed_us(0, 1) / calls : 0;
  t.iter_us.assign(s.iters, t.avg_us);
  return t;
}

}  // namespace

LoopTiming time_loop(ProcessGroup& pg, const CollectiveDescriptor& d, CallArgs args,
                     const LoopSettings& s) {
  if (s.graph_launches > 0) return time_graph(pg, d, args, s);
  device::DeviceRuntime& dev = pg.device_runtime();
  const bool async_dev = dev.asynchronous();
  const bool wait_each_op = s.blocking || (!async_dev && s.agg_iters <= 1);
  args.async_op = !wait_each_op;
  std::vector<std::shared_ptr<Work>> pending;
  LoopTiming t;
  const bool arrivals = s.arrivals && !async_dev;
  std::vector<std::chrono::steady_clock::time_point> entered;
  if (arrivals) {  // no allocation inside the loop
    entered.reserve(s.iters);
    t.wait_us.reserve(s.iters);
  }
  CpuWork work;
  volatile float work_sink = 0;
  const std::unique_ptr<device::Timer> timer = dev.timer();
  timer->reserve(s.iters + 1);
  timer->mark();
  for (int it = 0; it < s.iters; ++it) {
    for (int m = 0; m < s.agg_iters; ++m) {
      if (s.delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(s.delay_us));
      if (s.work_units > 0) work_sink = work_sink + work.run(s.work_units);
      if (arrivals && m == 0) entered.push_back(std::chrono::steady_clock::now());
      const Works works = d.run(pg, args);
      if (wait_each_op) {
        wait_all(works);
      } else {
        pending.insert(pending.end(), works.begin(), works.end());
      }
    }
    if (!async_dev) {  // the host times each iteration after waiting for it
      wait_all(pending);
      pending.clear();
    }
    timer->mark();
  }
  wait_all(pending);  // a CUDA runtime: the one wait at the end of the loop
  // An iteration's wait ends at its closing mark (a host runtime's marks are steady-clock times).
  for (int it = 0; arrivals && it < s.iters; ++it)
    t.wait_us.push_back(
        std::chrono::duration<double, std::micro>(timer->host_time(it + 1).value() - entered[it])
            .count());
  t.iter_us.reserve(s.iters);
  for (int it = 0; it < s.iters; ++it)
    t.iter_us.push_back(timer->elapsed_us(it, it + 1) / s.agg_iters);
  t.avg_us = s.iters > 0
                 ? timer->elapsed_us(0, s.iters) / (static_cast<double>(s.iters) * s.agg_iters)
                 : 0;
  return t;
}

}  // namespace collie::perf
