#pragma once
// CPU binding of the ranks a local launcher starts, as mpirun binds by default. On a machine
// with few cores an unbound rank's threads migrate with the scheduler's load balancing, and the
// placement it lands in sticks for seconds: on a 2-vCPU VM, 2 unbound ranks ran a 64 KiB
// all_reduce in 100-250 us depending on the run (median 242 us over 30 runs, spread 0.42-1.15x);
// bound to one CPU each, 100 us with runs within 0.98-1.07x. So `auto` gives every rank its own
// share of the CPUs this process may use; with more ranks than CPUs (they must take turns), one
// CPU each, round-robin. Pure functions but allowed_cpus(); thread-safe.
#include <string>
#include <vector>

namespace collie::launch {

enum class Binding { Auto, None };

// "auto" | "none"; throws InvalidArgument (one line naming the flag) otherwise.
Binding parse_binding(const std::string& text);
const char* binding_name(Binding b);

// The CPUs this process may run on (sched_getaffinity), ascending; empty when unknown.
std::vector<int> allowed_cpus();

// Each rank's CPUs: None (or no CPU known) gives every rank an empty set (not bound); Auto gives
// ranks <= CPUs disjoint contiguous shares (the first ranks take one more CPU when they do not
// divide evenly), and ranks > CPUs one CPU each, rank r on cpus[r % cpus.size()].
// REQUIRES: nprocs >= 1.
std::vector<std::vector<int>> rank_cpus(int nprocs, const std::vector<int>& cpus, Binding b);

// "rank 0 on CPU 0; rank 1 on CPU 1" (or a count past 8 ranks) for the log; "" when unbound.
std::string describe_binding(const std::vector<std::vector<int>>& sets, int cpus);

}  // namespace collie::launch
