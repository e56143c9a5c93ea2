#pragma once
// Runs a replay plan (plan.h) through the ProcessGroup API and times every op.
//
// Every rank of `world` calls run_plan with the same plan (checked: one all_gather of the plan's
// fingerprint); world rank i runs plan.ranks[i]. The plan's groups are made with new_group, in
// the plan's order, on every rank. Buffers come from the world's device runtime (host memory for
// gloo/mpi, the GPU for nccl): one zero-filled allocation of the rank's largest step (schedule.h),
// allocated only once every rank has checked that its step fits what its device has free (ranks
// whose buffers are host memory on one host add up); data is not checked.
// A pass runs every op of the rank in recorded order: a collective is issued and waited for (its
// time: issue to completion, the device synchronized); the send/recv ops between two
// collectives are posted together, as batch_isend_irecv does, and waited for before the next
// collective (each one's time: from the batch's start to its completion). Passes start on a
// world barrier; `warmup` passes are run first and not timed.
// Blocking steps are bounded by the timeout; errors name the rank, the op and its entry.
// Thread safety: one call per rank, from one thread.
#include <vector>

#include "comm/process_group.h"
#include "replay/plan.h"

namespace collie::replay {

struct RunnerOptions {
  int warmup = 1;
  int iters = 3;                      // timed passes (>= 1)
  Millis timeout = kUseGroupTimeout;  // each op and group creation; the world's when unset
};

struct RankTimes {
  std::vector<double> op_us;  // this rank's ops in plan order: mean over the timed passes
  double pass_us = 0;         // mean time of one pass on this rank
};

// REQUIRES: world.size() == plan.ranks.size(). Throws InvalidArgument when the ranks' plans
// differ, DeviceError on every rank when a rank's buffers would not fit its device's free memory,
// and the backend's errors (TimeoutError, ...) with the op named.
RankTimes run_plan(ProcessGroup& world, const ReplayPlan& plan, const RunnerOptions& o);

// Every rank's times on rank 0 (indexed by world rank); empty on the other ranks. Collective.
std::vector<RankTimes> gather_times(ProcessGroup& world, const RankTimes& mine, Millis timeout);

}  // namespace collie::replay
