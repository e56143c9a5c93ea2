// In-place runs of the collectives nccl-tests does not validate in place (alltoall, sendrecv):
// collie still moves the right data. Real Gloo ranks (processes on loopback) run each
// descriptor's call on one buffer the way the driver lays it out, then compare with the
// descriptor's expected values.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "perf/collective.h"
#include "support/multiprocess.h"

namespace collie::perf {
namespace {

using testing::check;
using testing::RankContext;

// One in-place call of `name` on `bytes` of int32, repeated `calls` times with fresh data.
void run_in_place(const std::string& name, size_t bytes, int calls) {
  auto result = testing::run_ranks(4, [&](RankContext& ctx) {
    const CollectiveDescriptor* d = find_collective(name);
    check(d != nullptr, "no collective {}", name);
    const DType dt = DType::Int32;
    const size_t ts = dtype_size(dt);
    const int n = ctx.world_size, me = ctx.rank;
    const Layout l = d->layout(bytes / ts, n);
    const size_t elems = std::max(me * l.send_inplace_offset + l.send_count,
                                  me * l.recv_inplace_offset + l.recv_count);
    std::vector<int32_t> buf(elems), staging(l.send_count), want(l.recv_count);
    CallArgs a;
    a.send = TensorView::cpu(buf.data() + me * l.send_inplace_offset, l.send_count, dt);
    a.recv = TensorView::cpu(buf.data() + me * l.recv_inplace_offset, l.recv_count, dt);
    a.in_place = true;
    if (d->in_place_staging) a.staging = staging.data();
    for (int c = 0; c < calls; ++c) {
      const DataSpec spec{dt, ReduceOp::Sum, n, static_cast<uint64_t>(c)};
      d->init(spec, l, me, 0, a.send.data);
      for (auto& w : d->run(*ctx.pg, a)) w->wait();
      const size_t checked = d->expected(spec, l, me, 0, want.data());
      const CheckResult cr = compare(a.recv.data, want.data(), checked, dt, false);
      check(cr.wrong == 0, "{} in place, rank {} call {}: {} wrong elements, first at {}", name, me,
            c, cr.wrong, cr.first_offset);
    }
  });
  EXPECT_TRUE(result.ok()) << result.summary();
}

TEST(PerfInPlace, AlltoallOnOneBufferIsCorrect) { run_in_place("alltoall", 64 << 10, 3); }

TEST(PerfInPlace, SendrecvOnOneBufferIsCorrect) { run_in_place("sendrecv", 64 << 10, 3); }

TEST(PerfInPlace, DescriptorsDeclareWhatNcclTestsDoesNotValidate) {
  for (const auto* d : all_collectives()) {
    const bool unchecked = d->name == "alltoall" || d->name == "sendrecv";
    EXPECT_EQ(d->in_place_unchecked, unchecked) << d->name;
  }
}

}  // namespace
}  // namespace collie::perf
