#pragma once
// How a replay plan's ops run on each rank (runner.h does it so): in steps, a step being one
// collective (issued, then waited for) or the send/recv ops between two collectives (posted
// together, as batch_isend_irecv does, and waited for before the next collective). From the
// steps follow what build_plan checks before any rank starts: the buffer memory a rank holds at
// once, and whether the ranks' orders let every step complete at all.
// Pure functions over a plan; thread-safe.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace collie::replay {

struct ReplayPlan;
struct PlanOp;
struct PlanCall;

// "all_reduce #7 of group 0 'default_pg', float32 x 1048576 (4194304 B)": how reports and
// messages name a call.
std::string call_label(const ReplayPlan& plan, const PlanCall& c);

// Ops [first, last) of one rank's op list.
struct Step {
  size_t first = 0, last = 0;
  bool p2p = false;  // a batch of send/recv ops; else one collective
};
std::vector<Step> steps_of(const std::vector<PlanOp>& ops);

// Every buffer of a step starts on kBufferAlign bytes, as device allocators align them.
inline constexpr size_t kBufferAlign = 256;
uint64_t aligned(uint64_t bytes);
// Bytes `rank`'s buffers take in step `s`: a collective's input then its output, or every
// send/recv of the batch, each rounded up to kBufferAlign. The runner lays them out so, in one
// allocation of the rank's largest step.
uint64_t step_bytes(const ReplayPlan& plan, size_t rank, const Step& s);

// The step of `rank` with the most bytes, and those bytes.
struct Peak {
  uint64_t bytes = 0;
  Step step;
};
Peak peak_of(const ReplayPlan& plan, size_t rank);

// "" when every rank can run its steps in order to the end. Otherwise one line naming ranks that
// wait for each other in a cycle: "rank 0 waits in all_reduce #1 of group 1 (its entry 0) for rank
// 1, which waits in all_reduce #1 of group 2 (its entry 0) for rank 0". Ranks are the dumps'.
std::string order_conflict(const ReplayPlan& plan);

// build_plan's checks of the steps: throws InvalidArgument (one line) when a rank's largest step
// holds more than max_bytes of buffers, naming the rank, its entries and the bytes, or when the
// ranks' orders conflict (order_conflict's line).
void check_schedule(const ReplayPlan& plan, int64_t max_bytes);

}  // namespace collie::replay
