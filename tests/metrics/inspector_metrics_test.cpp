// NCCL Inspector-compatible series: Inspector's message-size buckets and bandwidth formulas,
// the windowed aggregation (mean time, geometric-mean bus bandwidth), the fixed table bound,
// the n_nodes lookup through the store, and promtool on the exposition.
#include "metrics/inspector_metrics.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>
#include <string>

#include "core/env.h"
#include "debug/flight_recorder.h"
#include "metrics/group_hosts.h"
#include "metrics/inspector_format.h"
#include "metrics/metrics_prom_events.h"
#include "store/hash_store.h"

namespace collie {
namespace {

using namespace std::chrono_literals;
constexpr int64_t kSecond = 1'000'000'000;

TEST(InspectorFormat, MessageSizeBucketsAtUnitBoundaries) {
  constexpr uint64_t KiB = 1024, MiB = KiB * KiB, GiB = MiB * KiB, TiB = GiB * KiB;
  EXPECT_EQ(inspector_message_size(0), "0B");
  EXPECT_EQ(inspector_message_size(1), "1-2B");
  EXPECT_EQ(inspector_message_size(8), "8-9B");
  EXPECT_EQ(inspector_message_size(1023), "1023-1024B");
  EXPECT_EQ(inspector_message_size(KiB), "1-2KB");
  EXPECT_EQ(inspector_message_size(2 * KiB - 1), "1-2KB");
  EXPECT_EQ(inspector_message_size(1536), "1-2KB");
  EXPECT_EQ(inspector_message_size(MiB - 1), "1023-1024KB");
  EXPECT_EQ(inspector_message_size(MiB), "1-2MB");
  EXPECT_EQ(inspector_message_size(4 * GiB), "4-5GB");
  EXPECT_EQ(inspector_message_size(5 * GiB - 1), "4-5GB");
  EXPECT_EQ(inspector_message_size(TiB - 1), "1023-1024GB");
  EXPECT_EQ(inspector_message_size(TiB), "1-2TB");
  EXPECT_EQ(inspector_message_size(2048 * TiB), "2048-2049TB");  // TB is the largest unit
  EXPECT_EQ(inspector_message_size(UINT64_MAX), "16777215-16777216TB");
  // A bucket is named by its lower bound, which names the same bucket.
  for (uint64_t b : {uint64_t{0}, uint64_t{1023}, KiB + 5, MiB - 1, 4 * GiB + 7, 3 * TiB + 1}) {
    EXPECT_EQ(inspector_message_size(inspector_size_bucket(b)), inspector_message_size(b)) << b;
  }
  EXPECT_EQ(inspector_size_unit(0), 0);
  EXPECT_EQ(inspector_size_unit(1023), 0);
  EXPECT_EQ(inspector_size_unit(KiB), 1);
  EXPECT_EQ(inspector_size_unit(TiB - 1), 3);
  EXPECT_EQ(inspector_size_unit(UINT64_MAX), 4);
  EXPECT_EQ(inspector_size_bucket(MiB - 1), 1023 * KiB);
  EXPECT_EQ(inspector_size_bucket(4 * GiB + 7), 4 * GiB);
}

TEST(InspectorFormat, NamesBytesAndBusBandwidthAsInspector) {
  EXPECT_EQ(inspector_op_name(OpType::AllReduce), "AllReduce");
  EXPECT_EQ(inspector_op_name(OpType::ReduceScatter), "ReduceScatter");
  EXPECT_EQ(inspector_op_name(OpType::Recv), "Recv");
  EXPECT_EQ(inspector_op_name(OpType::AllToAll), "");
  EXPECT_EQ(inspector_op_name(OpType::Barrier), "");
  // reduce_scatter counts its per-rank output, everything else its input.
  EXPECT_EQ(inspector_message_bytes(OpType::ReduceScatter, 4000, 4), 1000u);
  EXPECT_EQ(inspector_message_bytes(OpType::AllGather, 1000, 4), 1000u);
  // 1e6 bytes in 1000 us = 1 GB/s algorithm bandwidth.
  EXPECT_DOUBLE_EQ(inspector_bus_bandwidth_gbs(OpType::AllReduce, 1'000'000, 4, 1000), 1.5);
  EXPECT_DOUBLE_EQ(inspector_bus_bandwidth_gbs(OpType::AllGather, 1'000'000, 4, 1000), 3.0);
  EXPECT_DOUBLE_EQ(inspector_bus_bandwidth_gbs(OpType::ReduceScatter, 1'000'000, 4, 1000), 3.0);
  EXPECT_DOUBLE_EQ(inspector_bus_bandwidth_gbs(OpType::Broadcast, 1'000'000, 4, 1000), 1.0);
  EXPECT_DOUBLE_EQ(inspector_bus_bandwidth_gbs(OpType::Send, 1'000'000, 2, 1000), 1.0);
  EXPECT_EQ(inspector_bus_bandwidth_gbs(OpType::AllReduce, 1'000'000, 1, 1000), 0.0);
  EXPECT_EQ(inspector_bus_bandwidth_gbs(OpType::AllReduce, 1'000'000, 4, 0), 0.0);
}

InspectorMetrics::Options test_options(std::optional<int> nodes = 1) {
  InspectorMetrics::Options o;
  o.window = 1s;
  o.cluster = "c1";
  o.slurm_job_id = "77";
  o.node = "host-a";
  o.node_count = [nodes](const GroupTrace&) { return nodes; };
  return o;
}

// The value of the one sample of `series` whose labels contain every `needles`; NaN if none.
double sample(const std::string& text, const std::string& series,
              std::initializer_list<std::string> needles) {
  const std::regex line("^" + series + "\\{([^}]*)\\} (\\S+)$");
  std::istringstream in(text);
  std::string l;
  double found = NAN;
  while (std::getline(in, l)) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    bool all = true;
    for (const auto& n : needles) all = all && m[1].str().find(n) != std::string::npos;
    if (!all) continue;
    EXPECT_TRUE(std::isnan(found)) << "two samples match in\n" << text;
    found = std::stod(m[2]);
  }
  return found;
}

TEST(InspectorMetrics, WindowHoldsMeanTimeAndGeometricMeanBusBandwidth) {
  InspectorMetrics m(test_options());
  GroupTrace g;
  testing::init_trace(g, 0, 4);
  const int64_t t0 = 100 * kSecond;
  EXPECT_EQ(m.serialize(t0).find("nccl_"), std::string::npos);  // opens the first window
  // Two all_reduces of 1e6 B (976.6 KiB: bucket "976-977KB") in 1000 us and
  // 4000 us -> busbw 1.5 and 0.375 GB/s, geometric mean 0.75; mean time 2500 us.
  m.record(0, g, OpType::AllReduce, 1'000'000, 1000us);
  m.record(0, g, OpType::AllReduce, 1'000'000, 4000us);
  m.record(0, g, OpType::Send, 2048, 10us);
  m.record(0, g, OpType::AllToAll, 2048, 10us);  // no Inspector name: not exported
  EXPECT_EQ(m.serialize(t0 + kSecond / 2).find("nccl_"), std::string::npos);  // window still open
  const std::string text = m.serialize(t0 + kSecond);
  const auto coll = {std::string("collective=\"AllReduce\""),
                     std::string("message_size=\"976-977KB\"")};
  EXPECT_NEAR(sample(text, "nccl_bus_bandwidth_gbs", coll), 0.75, 1e-9) << text;
  EXPECT_NEAR(sample(text, "nccl_collective_exec_time_microseconds", coll), 2500, 1e-9);
  const auto p2p = {std::string("p2p_operation=\"Send\""), std::string("message_size=\"2-3KB\"")};
  EXPECT_NEAR(sample(text, "nccl_p2p_bus_bandwidth_gbs", p2p), 2048 / 1e9 / 10e-6, 1e-9) << text;
  EXPECT_NEAR(sample(text, "nccl_p2p_exec_time_microseconds", p2p), 10, 1e-9);
  EXPECT_NE(text.find("nccl_bus_bandwidth_gbs{version=\"v5.1\",slurm_job_id=\"77\","
                      "node=\"host-a\",gpu=\"CPU\",comm_name=\"default_pg\",n_nodes=\"1\","
                      "nranks=\"4\",collective=\"AllReduce\",message_size=\"976-977KB\","
                      "algo_proto=\"unknown_unknown\",cluster=\"c1\"}"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("AlltoAll"), std::string::npos);
  EXPECT_EQ(text.find("algo_proto=\"unknown_unknown\",cluster=\"c1\"} ", text.find("nccl_p2p")),
            std::string::npos);
  // A scrape inside the next window shows the closed one again; the next window had no ops.
  EXPECT_EQ(m.serialize(t0 + kSecond + 1), text);
  m.record(0, g, OpType::AllReduce, 1'000'000, 2000us);
  const std::string next = m.serialize(t0 + 2 * kSecond);
  EXPECT_NEAR(sample(next, "nccl_collective_exec_time_microseconds", coll), 2000, 1e-9) << next;
  EXPECT_TRUE(std::isnan(sample(next, "nccl_p2p_exec_time_microseconds", p2p))) << next;
  EXPECT_EQ(m.serialize(t0 + 3 * kSecond).find("nccl_"), std::string::npos);
}

TEST(InspectorMetrics, SeriesWaitForTheGroupsNodeCount) {
  InspectorMetrics m(test_options(std::nullopt));
  GroupTrace g;
  testing::init_trace(g, 0, 2);
  m.serialize(kSecond);
  m.record(0, g, OpType::AllGather, 4096, 5us);
  EXPECT_EQ(m.serialize(3 * kSecond).find("nccl_"), std::string::npos);
}

TEST(InspectorMetrics, TableIsBoundedAndCountsWhatItDrops) {
  InspectorMetrics m(test_options());
  GroupTrace g;
  testing::init_trace(g, 0, 2);
  m.serialize(kSecond);
  // 1..1023 B are 1023 distinct buckets, twice the table.
  for (uint64_t b = 1; b < 1024; ++b) m.record(0, g, OpType::AllReduce, b, 1us);
  EXPECT_EQ(m.dropped_ops(), 1023u - InspectorMetrics::kMaxSeries);
  for (uint64_t b = 1; b < 1024; ++b) m.record(0, g, OpType::AllReduce, b, 1us);
  EXPECT_EQ(m.dropped_ops(), 2 * (1023u - InspectorMetrics::kMaxSeries));
  const std::string text = m.serialize(2 * kSecond);
  size_t series = 0;
  for (size_t at = 0;
       (at = text.find("\nnccl_collective_exec_time_microseconds{", at)) != std::string::npos;
       ++at) {
    ++series;
  }
  EXPECT_EQ(series, static_cast<size_t>(InspectorMetrics::kMaxSeries));
  EXPECT_NE(text.find(fmt::format("collie_inspector_dropped_ops_total {}",
                                  2 * (1023 - InspectorMetrics::kMaxSeries))),
            std::string::npos)
      << text.substr(text.size() - 300);
}

TEST(InspectorMetrics, PromtoolFlagsOnlyInspectorsMicrosecondUnit) {
  InspectorMetrics m(test_options());
  GroupTrace g;
  testing::init_trace(g, 0, 2);
  m.serialize(kSecond);
  m.record(0, g, OpType::ReduceScatter, 1 << 20, 100us);
  m.record(0, g, OpType::Recv, 1 << 20, 100us);
  const std::string text = m.serialize(2 * kSecond);
  const std::string path = fmt::format("/tmp/collie_inspector_{}.prom", getpid());
  std::ofstream(path) << text;
  FILE* p = popen(fmt::format("promtool check metrics < {} 2>&1", path).c_str(), "r");
  std::string out;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int rc = pclose(p);
  std::remove(path.c_str());
  // Inspector's names end in "microseconds"; promtool's unit lint is the only complaint.
  EXPECT_EQ(out,
            "nccl_collective_exec_time_microseconds use base unit \"seconds\" instead of "
            "\"microseconds\"\n"
            "nccl_p2p_exec_time_microseconds use base unit \"seconds\" instead of "
            "\"microseconds\"\n")
      << text;
  EXPECT_EQ(WEXITSTATUS(rc), 3);  // promtool's "lint problems" status, not a parse error
}

TEST(InspectorMetrics, OptionsFromTheEnvironment) {
  auto o = InspectorMetrics::options_from_env(MapEnv({}));
  EXPECT_EQ(o.slurm_job_id, "unknown");
  EXPECT_EQ(o.cluster, "");
  EXPECT_EQ(o.window, 30s);
  o = InspectorMetrics::options_from_env(MapEnv({{"SLURM_JOB_ID", "12"},
                                                 {"COLLIE_CLUSTER", "eos"},
                                                 {"COLLIE_INSPECTOR_WINDOW", "5s"},
                                                 {"RANK", "3"},
                                                 {"WORLD_SIZE", "4"},
                                                 {"LOCAL_RANK", "3"}}));
  EXPECT_EQ(o.slurm_job_id, "12");
  EXPECT_EQ(o.cluster, "eos");
  EXPECT_EQ(o.window, 5s);
  EXPECT_EQ(o.local_rank, 3);
  o = InspectorMetrics::options_from_env(MapEnv(
      {{"SLURM_JOB_ID", "12"}, {"COLLIE_JOB_ID", "train-7"}, {"COLLIE_INSPECTOR_WINDOW", "x"}}));
  EXPECT_EQ(o.slurm_job_id, "train-7");
  EXPECT_EQ(o.window, 30s);  // a bad value is ignored with a warning, never an abort at load
  EXPECT_TRUE(o.node_count);
}

TEST(GroupHosts, CountsDistinctHostsOnceEveryRankPublished) {
  auto store = std::make_shared<HashStore>();
  GroupTrace g;
  testing::init_trace(g, 0, 3);
  g.store = store;
  GroupHosts hosts;
  publish_host(*store, "a");
  publish_host(*store, "b");
  EXPECT_EQ(hosts.node_count(g), std::nullopt);  // 2 of 3 ranks counted in
  publish_host(*store, "a");
  EXPECT_EQ(hosts.node_count(g), std::optional<int>(2));
  publish_host(*store, "c");  // cached once known
  EXPECT_EQ(hosts.node_count(g), std::optional<int>(2));
  // A scrape reads two counters, never the N names: its store traffic does not grow with N.
  GroupTrace big;
  testing::init_trace(big, 0, 4096);
  auto big_store = std::make_shared<HashStore>();
  big.store = big_store;
  for (int r = 0; r < 4096; ++r) publish_host(*big_store, fmt::format("node{:04d}", r / 8));
  GroupHosts big_hosts;
  EXPECT_EQ(big_hosts.node_count(big), std::optional<int>(512));
  EXPECT_EQ(big_store->num_keys(), 512 + 2);
  GroupTrace no_store;
  testing::init_trace(no_store, 0, 2);
  EXPECT_EQ(hosts.node_count(no_store), std::nullopt);
}

}  // namespace
}  // namespace collie
