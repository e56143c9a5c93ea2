// perf's timed loop allocates nothing per iteration of its own: over a group whose ops allocate
// nothing (each op hands back the same completed Work), a loop of 400 iterations makes as many
// heap allocations as a loop of 100, with -I's per-iteration waits and without. (A vector per
// op for run()'s Works, or timer marks that grow inside the loop, fail it.)
#include <gtest/gtest.h>

#include <memory>

#include "comm/process_group.h"
#include "metrics/alloc_counter.h"
#include "perf/collective.h"
#include "perf/timed_loop.h"

namespace collie::perf {
namespace {

GroupInfo one_rank() {
  GroupInfo i;
  i.backend = "completed";
  i.rank = 0;
  i.size = 1;
  i.global_ranks = {0};
  return i;
}

class CompletedOps : public ProcessGroup {
 public:
  CompletedOps() : ProcessGroup(one_rank()) {
    caps_.backend = "completed";
    for (auto& o : caps_.ops) o = OpCapability{true, false, kAllDTypeBits, kAllReduceOpBits};
    done_->complete();
  }
  const Capabilities& capabilities() const override { return caps_; }

 protected:
  std::shared_ptr<Work> run(const OpCall&) override { return done_; }

 private:
  Capabilities caps_;
  std::shared_ptr<Work> done_ = std::make_shared<Work>(OpType::AllReduce, 0, Millis(1000));
};

int allocations_of_loop(ProcessGroup& pg, int iters, bool arrivals) {
  const CollectiveDescriptor* d = find_collective("all_reduce");
  float buf[4] = {};
  CallArgs a;
  a.send = a.recv = TensorView::cpu(buf, 4, DType::Float32);
  a.in_place = true;
  LoopSettings s;
  s.iters = iters;
  s.arrivals = arrivals;
  int n = 0;
  {
    testing::AllocationCounter counter;
    const LoopTiming t = time_loop(pg, *d, a, s);
    n = counter.count();
    EXPECT_EQ(t.iter_us.size(), static_cast<size_t>(iters));
    EXPECT_EQ(t.wait_us.size(), arrivals ? static_cast<size_t>(iters) : 0u);
  }
  return n;
}

TEST(TimedLoop, AllocatesNothingPerIteration) {
  CompletedOps pg;
  for (const bool arrivals : {false, true}) {
    allocations_of_loop(pg, 10, arrivals);  // whatever a first use allocates
    const int short_loop = allocations_of_loop(pg, 100, arrivals);
    const int long_loop = allocations_of_loop(pg, 400, arrivals);
    EXPECT_EQ(long_loop, short_loop) << (arrivals ? "with -I" : "without -I") << ": 100 iterations "
                                     << short_loop << " allocations, 400 iterations " << long_loop;
  }
}

}  // namespace
}  // namespace collie::perf
