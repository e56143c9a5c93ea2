#pragma once
// How long this process's threads have waited for a CPU while runnable: the second field of
// /proc/self/task/*/schedstat (run_delay), summed over the threads. The difference over a
// measurement, over its wall time, is how CPU-bound it was (pairwise: a link measured while its
// ranks queued for a core is slow for a reason that is not the link; perf -I: a rank whose core
// something else keeps busy). Reads /proc only; thread-safe.

namespace collie {

// Seconds, summed over this process's threads; -1 where the kernel does not say.
double process_cpu_wait_seconds();

}  // namespace collie
