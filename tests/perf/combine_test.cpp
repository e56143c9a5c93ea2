// combine_ranks (src/perf/combine.h): every rank's gathered numbers into one ResultRow, without a
// ProcessGroup. Three ranks whose records are written out here, numbers checked exactly.
#include "perf/combine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace collie::perf {
namespace {

// all_gather-like factors: algbw counts count * ts * n bytes; busbw = algbw * (n - 1) / n.
CollectiveDescriptor gather_like(bool reduces) {
  CollectiveDescriptor d;
  d.name = "fake_gather";
  d.op_type = OpType::AllGather;
  d.reduces = reduces;
  d.algbw_ranks_factor = [](int n) { return n; };
  d.busbw_factor = [](int n) { return static_cast<double>(n - 1) / n; };
  return d;
}

RowContext context(const CollectiveDescriptor* d) {
  RowContext c;
  c.desc = d;
  c.dtype = DType::Float32;
  c.op = ReduceOp::Max;
  c.root = 2;
  c.cycle = 5;
  c.layout.count = 1000;
  c.layout.send_count = 1000;
  c.layout.recv_count = 3000;
  c.in_place = true;
  c.iters = 4;
  return c;
}

// One rank's numbers without -I's waits.
LocalResult local(double avg_us, int64_t wrong, int64_t first_wrong, std::vector<double> iter_us) {
  LocalResult r;
  r.avg_us = avg_us;
  r.wrong = wrong;
  r.first_wrong = first_wrong;
  r.iter_us = std::move(iter_us);
  return r;
}

// Rank 0: avg 15 µs, checked and right; rank 1: avg 30, 3 wrong from offset 7, stop flag 15;
// rank 2: avg 10, 2 wrong from offset 5, stop flag 2.
std::vector<double> gathered() {
  std::vector<double> all;
  auto add = [&](const LocalResult& r, int stop) {
    const std::vector<double> v = pack_local(r, stop);
    all.insert(all.end(), v.begin(), v.end());
  };
  add(local(15, 0, -1, {100, 1, 5, 9}), 0);
  add(local(30, 3, 7, {1, 2, 8, 3}), 15);
  add(local(10, 2, 5, {50, 4, 6, 7}), 2);
  return all;
}

PerfOptions options(TimeReduce average, bool report_iters) {
  PerfOptions o;
  o.average = average;
  o.iter_skip = 1;
  o.report_iters = report_iters;
  o.agg_iters = 3;
  return o;
}

TEST(PerfCombine, PackLayout) {
  const std::vector<double> v = pack_local(local(2.5, 4, 9, {7, 8}), 3);
  EXPECT_EQ(v, (std::vector<double>{2.5, 4, 9, 3, 7, 8}));
  EXPECT_EQ(v[kPackedIterAt], 7);
}

TEST(PerfCombine, RowFieldsWrongAndStop) {
  const CollectiveDescriptor d = gather_like(false);
  const Combined c = combine_ranks(context(&d), options(TimeReduce::Avg, false), gathered(), 3);
  const reports::ResultRow& r = c.row;
  EXPECT_EQ(c.stop, 15);
  EXPECT_EQ(c.wrong, 5);
  EXPECT_EQ(r.wrong, 5);
  EXPECT_EQ(r.wrong_rank, 1);
  EXPECT_EQ(r.wrong_offset, 7);
  EXPECT_EQ(r.collective, "fake_gather");
  EXPECT_EQ(r.placement, "in");
  EXPECT_EQ(r.size_bytes, 12000);  // the larger buffer: 3000 floats
  EXPECT_EQ(r.count, 1000);
  EXPECT_EQ(r.dtype, "float");
  EXPECT_EQ(r.redop, "none");
  EXPECT_EQ(r.root, 2);
  EXPECT_EQ(r.iters, 4);
  EXPECT_EQ(r.agg_iters, 3);
  EXPECT_EQ(r.cycle, 5);
  EXPECT_EQ(r.rank_time_us, (std::vector<double>{15, 30, 10}));
  EXPECT_EQ(r.slowest_rank, 1);
  // Without -I no samples are kept, but the per-iteration statistics are.
  EXPECT_TRUE(r.samples_us.empty());
  EXPECT_TRUE(r.rank_samples_us.empty());
  EXPECT_EQ(r.iter.samples, 3);
  EXPECT_DOUBLE_EQ(r.iter.min_us, 4);
  EXPECT_DOUBLE_EQ(r.iter.p50_us, 8);
  EXPECT_DOUBLE_EQ(r.iter.max_us, 9);
  EXPECT_DOUBLE_EQ(r.iter.mean_us, 7);
}

TEST(PerfCombine, ReducingRowNamesItsOp) {
  const CollectiveDescriptor d = gather_like(true);
  const Combined c = combine_ranks(context(&d), options(TimeReduce::Avg, false), gathered(), 3);
  EXPECT_EQ(c.row.redop, "max");
}

TEST(PerfCombine, SlowestRankPerIterationAfterSkip) {
  const CollectiveDescriptor d = gather_like(false);
  const Combined c = combine_ranks(context(&d), options(TimeReduce::Avg, true), gathered(), 3);
  // Iteration 0 (100 µs on rank 0) is skipped; then the slowest rank of each iteration.
  EXPECT_EQ(c.row.samples_us, (std::vector<double>{4, 8, 9}));
  EXPECT_EQ(c.row.iter_skip, 1);
  ASSERT_EQ(c.row.rank_samples_us.size(), 3u);
  EXPECT_EQ(c.row.rank_samples_us[0], (std::vector<double>{1, 5, 9}));
  EXPECT_EQ(c.row.rank_samples_us[1], (std::vector<double>{2, 8, 3}));
  EXPECT_EQ(c.row.rank_samples_us[2], (std::vector<double>{4, 6, 7}));
}

TEST(PerfCombine, EachTimeReductionAndBandwidth) {
  const CollectiveDescriptor d = gather_like(false);
  struct Case {
    TimeReduce mode;
    double time_us;
  };
  // algbw: 1000 floats * 3 ranks = 12000 bytes; busbw = algbw * 2/3.
  for (const Case& k : {Case{TimeReduce::Rank0, 15}, Case{TimeReduce::Avg, 55.0 / 3},
                        Case{TimeReduce::Min, 10}, Case{TimeReduce::Max, 30}}) {
    SCOPED_TRACE(static_cast<int>(k.mode));
    const Combined c = combine_ranks(context(&d), options(k.mode, false), gathered(), 3);
    EXPECT_DOUBLE_EQ(c.row.time_us, k.time_us);
    EXPECT_DOUBLE_EQ(c.row.algbw_gbps, 12000 / 1e3 / k.time_us);
    EXPECT_DOUBLE_EQ(c.row.busbw_gbps, 12000 / 1e3 / k.time_us * 2 / 3);
  }
}

TEST(PerfCombine, UncheckedRanksAndZeroTime) {
  const CollectiveDescriptor d = gather_like(false);
  RowContext ctx = context(&d);
  ctx.iters = 1;
  std::vector<double> all;
  for (int k = 0; k < 2; ++k) {
    const std::vector<double> v = pack_local(local(0, -1, -1, {0}), 0);
    all.insert(all.end(), v.begin(), v.end());
  }
  PerfOptions o = options(TimeReduce::Avg, false);
  o.iter_skip = 0;
  const Combined c = combine_ranks(ctx, o, all, 2);
  EXPECT_EQ(c.wrong, -1);
  EXPECT_EQ(c.row.wrong, -1);
  EXPECT_EQ(c.row.wrong_rank, -1);
  EXPECT_EQ(c.stop, 0);
  EXPECT_EQ(c.row.slowest_rank, 0);
  EXPECT_EQ(c.row.algbw_gbps, 0);
  EXPECT_EQ(c.row.busbw_gbps, 0);
}

// -I on a host runtime: every record also carries its waits and its CPU wait; the row gets the
// waits past -K, who arrived last (reports/arrival.h) and every rank's CPU wait.
std::vector<double> gathered_with_waits(const std::vector<LocalResult>& ranks) {
  std::vector<double> all;
  for (const auto& r : ranks) {
    const std::vector<double> v = pack_local(r, 0, true);
    EXPECT_EQ(v.size(), kPackedIterAt + 2 * r.iter_us.size() + 1);
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

TEST(PerfCombine, WaitsGiveArrivalStatistics) {
  const CollectiveDescriptor d = gather_like(false);
  RowContext ctx = context(&d);
  ctx.waits = true;
  // Rank 2 enters every call 2000 us after the others, so it waits 2000 us less; iteration 0
  // (-K 1) is skipped.
  std::vector<LocalResult> ranks = {{15, 0, -1, {100, 1, 5, 9}, {9000, 3000, 3000, 3000}, 0.01},
                                    {30, 0, -1, {1, 2, 8, 3}, {9000, 3000, 3100, 3000}, 0.02},
                                    {10, 0, -1, {50, 4, 6, 7}, {9000, 1000, 1000, 1100}, 0.9}};
  Combined c = combine_ranks(ctx, options(TimeReduce::Avg, true), gathered_with_waits(ranks), 3);
  ASSERT_EQ(c.row.rank_wait_us.size(), 3u);
  EXPECT_EQ(c.row.rank_wait_us[2], (std::vector<double>{1000, 1000, 1100}));
  EXPECT_EQ(c.row.samples_us, (std::vector<double>{4, 8, 9}));  // the times are where they were
  EXPECT_EQ(c.row.arrival.iters, 3);
  ASSERT_EQ(c.row.arrival.ranks.size(), 3u);
  EXPECT_DOUBLE_EQ(c.row.arrival.ranks[2].late_p50_us, 2000);
  EXPECT_DOUBLE_EQ(c.row.arrival.ranks[2].last_fraction, 1);
  ASSERT_EQ(reports::late_ranks(c.row.arrival).size(), 1u);
  EXPECT_EQ(reports::late_ranks(c.row.arrival)[0].rank, 2);
  EXPECT_EQ(c.row.rank_cpu_wait, (std::vector<double>{0.01, 0.02, 0.9}));
  // A rank whose runtime measured no waits (NaN in its record) and one whose kernel gave no CPU
  // wait: neither statistic is made up from the others.
  ranks[1].wait_us.clear();
  ranks[0].cpu_wait = std::nan("");
  c = combine_ranks(ctx, options(TimeReduce::Avg, true), gathered_with_waits(ranks), 3);
  EXPECT_TRUE(c.row.rank_wait_us.empty());
  EXPECT_EQ(c.row.arrival.iters, 0);
  EXPECT_TRUE(c.row.rank_cpu_wait.empty());
  EXPECT_EQ(c.row.samples_us, (std::vector<double>{4, 8, 9}));
}

// combine_totals: what every rank needs (stop flag, #wrong), the same as combine_ranks' totals.
TEST(PerfCombine, TotalsMatchTheFullRow) {
  const CollectiveDescriptor d = gather_like(false);
  const RowTotals t = combine_totals(gathered(), 3);
  EXPECT_EQ(t.stop, 15);
  EXPECT_EQ(t.wrong, 5);
  const Combined c = combine_ranks(context(&d), options(TimeReduce::Avg, false), gathered(), 3);
  EXPECT_EQ(t.stop, c.stop);
  EXPECT_EQ(t.wrong, c.wrong);
}

TEST(PerfCombine, TotalsWhenNoRankCheckedOrSomeDid) {
  std::vector<double> all;
  auto add = [&](const LocalResult& r, int stop) {
    const std::vector<double> v = pack_local(r, stop);
    all.insert(all.end(), v.begin(), v.end());
  };
  add(local(1, -1, -1, {1, 2}), 0);
  add(local(1, -1, -1, {1, 2}), 0);
  RowTotals t = combine_totals(all, 2);
  EXPECT_EQ(t.wrong, -1);
  EXPECT_EQ(t.stop, 0);
  add(local(1, 0, -1, {1, 2}), 2);  // a third rank checked and found nothing wrong
  t = combine_totals(all, 3);
  EXPECT_EQ(t.wrong, 0);
  EXPECT_EQ(t.stop, 2);
}

}  // namespace
}  // namespace collie::perf
