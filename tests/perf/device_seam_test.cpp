// The perf driver through the device seam (device/device_runtime.h) without a GPU: a staged
// runtime (host memory that the driver must treat as device memory) validates every collective
// through copies and names its device in "# Using devices"; -G on a host runtime is one
// DeviceError; -M prints one memory line per rank.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "perf/driver.h"
#include "reports/table.h"
#include "staged_runtime.h"
#include "support/multiprocess.h"
#include "support/thread_group.h"

namespace collie::perf {
namespace {

using testing::RankContext;
using testing::run_ranks;
using testing::StagedRuntime;
using testing::ThreadGroup;

// The reference thread group, bare: the test gives each rank's ThreadGroup its runtime.
const testing::RunOptions kThreads{
    .backend = "threads", .mode = testing::Mode::Threads, .stack = false};

struct Sink : ResultSink {
  std::vector<reports::ResultRow> rows;
  std::vector<std::string> notes;
  std::string header;
  void collective_started(const reports::TableHeader& h) override {
    header = reports::format_header(h);
  }
  void row(const reports::ResultRow* out, const reports::ResultRow* in) override {
    if (out) rows.push_back(*out);
    if (in) rows.push_back(*in);
  }
  void collective_finished(const std::string&, const std::vector<reports::ResultRow>&,
                           const reports::Summary&) override {}
  void note(const std::string& l) override { notes.push_back(l); }
};

PerfOptions small(std::vector<std::string> colls) {
  PerfOptions o;
  o.collectives = std::move(colls);
  o.min_bytes = 64;
  o.max_bytes = 4096;
  o.step_factor = 8;
  o.iters = 3;
  o.timeout = Millis(20000);
  return o;
}

using Runtimes = std::vector<std::unique_ptr<StagedRuntime>>;

// Runs `o` on n ranks, each with its own StagedRuntime; returns wrong_total.
int64_t run_staged(int n, const PerfOptions& o, Sink& sink, Runtimes& rts) {
  rts.clear();
  for (int r = 0; r < n; ++r) rts.push_back(std::make_unique<StagedRuntime>(r));
  std::atomic<int64_t> wrong{-1};
  const auto ranks = run_ranks(
      n,
      [&](RankContext& ctx) {
        dynamic_cast<ThreadGroup&>(*ctx.pg).use_runtime(rts[ctx.rank].get());
        const PerfOutcome res = run_perf(*ctx.pg, o, &sink, "test");
        if (ctx.rank == 0) wrong = res.wrong_total;
      },
      kThreads);
  EXPECT_TRUE(ranks.ok()) << ranks.summary();
  return wrong.load();
}

TEST(PerfDeviceSeam, StagedDeviceValidatesEveryCollectiveThroughCopies) {
  std::vector<std::string> all;
  for (auto* d : all_collectives()) all.push_back(d->name);
  PerfOptions o = small(all);
  o.dtypes = {DType::Float32, DType::Int8, DType::BFloat16};
  o.ops = {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Avg};
  o.agg_iters = 2;  // the asynchronous loop keeps every Work until its end
  Sink sink;
  Runtimes rts;
  EXPECT_EQ(run_staged(3, o, sink, rts), 0);
  ASSERT_FALSE(sink.rows.empty());
  for (const auto& r : sink.rows) {
    EXPECT_GT(r.time_us, 0) << r.collective;
    EXPECT_EQ(r.iter.samples, 3) << r.collective;
  }
  for (const auto& rt : rts) {
    EXPECT_GT(rt->to_device, 0);  // validation input staged to the "device"
    EXPECT_GT(rt->to_host, 0);    // and results copied back to be checked
  }
}

TEST(PerfDeviceSeam, CorruptionOfTheCopiedBackResultIsCounted) {
  PerfOptions o = small({"all_reduce"});
  o.hooks.corrupt_rank = 1;
  o.hooks.corrupt_offset = 0;
  Sink sink;
  Runtimes rts;
  EXPECT_GT(run_staged(2, o, sink, rts), 0);
}

TEST(PerfDeviceSeam, UsingDevicesLinesNameEachRanksDevice) {
  Sink sink;
  Runtimes rts;
  ASSERT_EQ(run_staged(2, small({"all_gather"}), sink, rts), 0);
  EXPECT_NE(sink.header.find("device  0 [0000:00:00] Staged Test Device\n"), std::string::npos)
      << sink.header;
  EXPECT_NE(sink.header.find("device  1 [0000:01:00] Staged Test Device\n"), std::string::npos)
      << sink.header;
}

TEST(PerfDeviceSeam, HostRuntimeKeepsTheHostMemoryLine) {
  Sink sink;
  const auto ranks = run_ranks(
      1, [&](RankContext& ctx) { run_perf(*ctx.pg, small({"all_reduce"}), &sink, "test"); },
      kThreads);
  EXPECT_TRUE(ranks.ok()) << ranks.summary();
  EXPECT_NE(sink.header.find("device -1 [cpu] host memory\n"), std::string::npos) << sink.header;
  EXPECT_NE(sink.header.find(" graph: 0 "), std::string::npos) << sink.header;
}

TEST(PerfDeviceSeam, GraphsOnTheHostAreOneDeviceError) {
  PerfOptions o = small({"all_reduce"});
  o.graph_launches = 1;
  const auto ranks = run_ranks(
      1, [&](RankContext& ctx) { run_perf(*ctx.pg, o, nullptr, "test"); }, kThreads);
  try {
    if (ranks.ranks[0].error) std::rethrow_exception(ranks.ranks[0].error);
    FAIL() << "-G on a host runtime did not throw";
  } catch (const DeviceError& e) {
    EXPECT_STREQ(e.what(), "-G needs a CUDA backend (--backend nccl); threads runs on the host");
  }
}

TEST(PerfDeviceSeam, MemoryReportPrintsOneLinePerRank) {
  PerfOptions o = small({"all_reduce"});
  o.memory_report = true;
  Sink sink;
  Runtimes rts;
  ASSERT_EQ(run_staged(2, o, sink, rts), 0);
  int lines = 0;
  for (const auto& n : sink.notes) {
    if (n.find(" memory: peak ") == std::string::npos) continue;
    ++lines;
    EXPECT_NE(n.find("device 1024.0 MiB total, 512.0 MiB free"), std::string::npos) << n;
  }
  EXPECT_EQ(lines, 2);
}

}  // namespace
}  // namespace collie::perf
