// In-place runs of the collectives nccl-tests does not validate in place (alltoall, sendrecv):
// collie still moves the right data. Real Gloo ranks (processes on loopback) run each
// descriptor's call on one buffer the way the driver lays it out. The expected result is built
// here from the data movement's definition and every rank's input (the descriptor's init), not
// from the descriptor's own expected(), so a run() and expected() that agree on the wrong
// movement still fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "perf/collective.h"
#include "support/multiprocess.h"

namespace collie::perf {
namespace {

using testing::check;
using testing::RankContext;

// Rank `me`'s received elements after one call, from the definition of the movement: alltoall
// puts block `me` of rank k's input at block k; the sendrecv ring delivers rank me-1's input.
std::vector<int32_t> moved_to(const std::string& name, const CollectiveDescriptor& d,
                              const DataSpec& spec, const Layout& l, int me) {
  const int n = spec.world_size;
  auto input_of = [&](int rank) {
    std::vector<int32_t> in(l.send_count);
    d.init(spec, l, rank, 0, in.data());
    return in;
  };
  std::vector<int32_t> want(l.recv_count);
  if (name == "alltoall") {
    for (int k = 0; k < n; ++k) {
      const auto in = input_of(k);
      std::copy_n(in.begin() + me * l.count, l.count, want.begin() + k * l.count);
    }
  } else if (name == "sendrecv") {
    want = input_of((me - 1 + n) % n);
  } else {
    throw std::runtime_error("moved_to: no definition for " + name);
  }
  return want;
}

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
    std::vector<int32_t> buf(elems), staging(l.send_count);
    CallArgs a;
    a.send = TensorView::cpu(buf.data() + me * l.send_inplace_offset, l.send_count, dt);
    a.recv = TensorView::cpu(buf.data() + me * l.recv_inplace_offset, l.recv_count, dt);
    a.in_place = true;
    if (d->in_place_staging) a.staging = staging.data();
    for (int c = 0; c < calls; ++c) {
      const DataSpec spec{dt, ReduceOp::Sum, n, static_cast<uint64_t>(c)};
      // Inputs differ between ranks, or a wrong source could not show.
      std::vector<int32_t> mine(l.send_count), next(l.send_count);
      d->init(spec, l, me, 0, mine.data());
      d->init(spec, l, (me + 1) % n, 0, next.data());
      check(mine != next, "{}: ranks {} and {} have the same input", name, me, (me + 1) % n);
      d->init(spec, l, me, 0, a.send.data);
      for (auto& w : d->run(*ctx.pg, a)) w->wait();
      const std::vector<int32_t> want = moved_to(name, *d, spec, l, me);
      check(l.recv_count == want.size(), "{}: recv_count {}", name, l.recv_count);
      const auto* got = static_cast<const int32_t*>(a.recv.data);
      size_t wrong = 0, first = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        if (got[i] != want[i] && wrong++ == 0) first = i;
      }
      check(wrong == 0, "{} in place, rank {} call {}: {} wrong elements, first at {}", name, me, c,
            wrong, first);
    }
  });
  EXPECT_TRUE(result.ok()) << result.summary();
}

TEST(PerfInPlace, AlltoallOnOneBufferIsCorrect) { run_in_place("alltoall", 64 << 10, 3); }

TEST(PerfInPlace, SendrecvOnOneBufferIsCorrect) { run_in_place("sendrecv", 64 << 10, 3); }

TEST(PerfInPlace, DescriptorsDeclareWhatNcclTestsDoesNotValidate) {
  for (const auto* d : all_collectives()) {
    const bool unchecked = d->name == "alltoall" || d->name == "alltoallv" || d->name == "sendrecv";
    EXPECT_EQ(d->in_place_unchecked, unchecked) << d->name;
  }
}

}  // namespace
}  // namespace collie::perf
