// perf's alltoallv over real Gloo ranks (processes on loopback), with uneven splits that include
// zeros: a rank that sends nothing, one that receives nothing, pairs that exchange nothing. The
// expected result is built here from the byte matrix itself (prefix sums written out in this
// test) and every rank's input (the descriptor's init), not from the descriptor's expected() or
// the traffic model's offsets; expected() is then checked against it, and the driver's validation
// loop must count a corrupted element.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "perf/collective.h"
#include "perf/validation.h"
#include "support/multiprocess.h"

namespace collie::perf {
namespace {

using testing::check;
using testing::RankContext;

// Bytes rank i sends rank j (row i). Rank 2 sends nothing; rank 3 receives nothing; 1 -> 1 and
// 0 -> 1 carry nothing; the rest are uneven multiples of 16 bytes.
const std::vector<std::vector<int64_t>> kMatrix = {
    {64, 0, 1024, 0},
    {16, 0, 48, 0},
    {0, 0, 0, 0},
    {4096, 32, 16, 0},
};

TrafficSpec matrix_spec() {
  TrafficSpec s;
  s.kind = TrafficKind::Matrix;
  s.matrix_path = "test";
  s.matrix_dim = 4;
  for (const auto& row : kMatrix)
    s.matrix_bytes.insert(s.matrix_bytes.end(), row.begin(), row.end());
  return s;
}

// What rank `me` must hold after one call: from each source k in rank order, the elements of
// k's input that follow what k sends to the ranks below `me`.
std::vector<int32_t> oracle(const CollectiveDescriptor& d, const DataSpec& spec,
                            const TrafficModel& t, int me) {
  std::vector<int32_t> want;
  for (int k = 0; k < 4; ++k) {
    const Layout lk = d.traffic_layout(0, DType::Int32, 4, k, t);
    std::vector<int32_t> in(lk.send_count + 1);
    d.init(spec, lk, k, 0, in.data());
    int64_t skip = 0;
    for (int j = 0; j < me; ++j) skip += kMatrix[k][j] / 4;
    const int64_t take = kMatrix[k][me] / 4;
    want.insert(want.end(), in.begin() + skip, in.begin() + skip + take);
  }
  return want;
}

void run_alltoallv(bool in_place) {
  auto result = testing::run_ranks(4, [&](RankContext& ctx) {
    const CollectiveDescriptor* d = find_collective("alltoallv");
    check(d != nullptr && d->traffic_layout != nullptr, "no alltoallv descriptor");
    const int me = ctx.rank;
    const TrafficModel t(matrix_spec(), 4);
    const Layout l = d->traffic_layout(0, DType::Int32, 4, me, t);
    // Buffers as the driver lays them out: the busiest rank's sizes, one buffer in place.
    check(l.send_count == 4096 / 4 + 32 / 4 + 16 / 4 && l.recv_count == 4096 / 4 + 64 / 4 + 16 / 4,
          "rank {}: buffers of {} and {} elements", me, l.send_count, l.recv_count);
    std::vector<int32_t> a(std::max(l.send_count, l.recv_count)), b(l.recv_count),
        staging(l.send_count);
    CallArgs args;
    args.send = TensorView::cpu(a.data(), l.send_count, DType::Int32);
    args.recv = TensorView::cpu(in_place ? a.data() : b.data(), l.recv_count, DType::Int32);
    args.in_place = in_place;
    args.staging = staging.data();
    args.traffic = l.traffic.get();
    for (uint64_t seed = 0; seed < 3; ++seed) {
      const DataSpec spec{DType::Int32, ReduceOp::Sum, 4, seed};
      std::fill(b.begin(), b.end(), -1);
      d->init(spec, l, me, 0, args.send.data);
      for (auto& w : d->run(*ctx.pg, args)) w->wait();
      const std::vector<int32_t> want = oracle(*d, spec, t, me);
      const auto* got = static_cast<const int32_t*>(args.recv.data);
      size_t wrong = 0;
      for (size_t i = 0; i < want.size(); ++i) wrong += got[i] != want[i];
      check(wrong == 0, "rank {} seed {}{}: {} of {} elements wrong", me, seed,
            in_place ? " in place" : "", wrong, want.size());
      // The descriptor's expected() (what validation compares with) is the same data.
      std::vector<int32_t> expected(l.recv_count);
      const size_t n = d->expected(spec, l, me, 0, expected.data());
      check(n == want.size() && std::equal(want.begin(), want.end(), expected.begin()),
            "rank {}: expected() differs from the oracle ({} vs {} elements)", me, n, want.size());
    }
    if (in_place) return;
    // The validation loop over the same call: clean, then with one element flipped on rank 0.
    const DataSpec spec{DType::Int32, ReduceOp::Sum, 4, 9};
    const CheckCounts clean = validate(*ctx.pg, ctx.pg->device_runtime(), *d, args, spec, l, 2, {});
    check(clean.wrong == 0, "rank {}: validation counted {} wrong", me, clean.wrong);
    TestHooks corrupt;
    corrupt.corrupt_rank = 0;
    corrupt.corrupt_offset = 5;
    const CheckCounts bad =
        validate(*ctx.pg, ctx.pg->device_runtime(), *d, args, spec, l, 1, corrupt);
    check(bad.wrong == (me == 0 ? 1 : 0), "rank {}: {} wrong after corrupting rank 0", me,
          bad.wrong);
  });
  EXPECT_TRUE(result.ok()) << result.summary();
}

TEST(PerfAlltoallv, UnevenSplitsWithZerosMatchTheOracle) { run_alltoallv(false); }

TEST(PerfAlltoallv, InPlaceOnOneBufferMatchesTheOracle) { run_alltoallv(true); }

}  // namespace
}  // namespace collie::perf
