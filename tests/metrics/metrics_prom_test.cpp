#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "debug/flight_recorder.h"
#include "metrics/alloc_counter.h"
#include "metrics/live_status.h"
#include "metrics/metrics.h"
#include "metrics/metrics_observer.h"
#include "metrics/metrics_prom_events.h"

namespace collie {
namespace {

using testing::init_trace;
using testing::trace_completed;
using testing::trace_scheduled;

// Runs `promtool check metrics` on the text; returns its combined output ("" = clean).
std::string promtool_check(const std::string& text, int* rc) {
  char path[] = "/tmp/collie_metrics_XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << text;
  const std::string cmd = fmt::format("promtool check metrics < {} 2>&1", path);
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  *rc = pclose(p);
  std::remove(path);
  return out;
}

TEST(MetricsProm, SizeClassesArePowerOfFourBuckets) {
  EXPECT_EQ(size_class_name(size_class_index(0)), "le_1KiB");
  EXPECT_EQ(size_class_name(size_class_index(1024)), "le_1KiB");
  EXPECT_EQ(size_class_name(size_class_index(1025)), "le_4KiB");
  EXPECT_EQ(size_class_name(size_class_index(64u << 20)), "le_64MiB");
  EXPECT_EQ(size_class_name(size_class_index((64u << 20) + 1)), "gt_64MiB");
}

TEST(MetricsProm, ObserverFeedsCountersHistogramAndGauges) {
  Metrics m;
  LiveStatus live;
  MetricsObserver obs(m, live);
  GroupTrace g;
  init_trace(g, 3, 4);
  for (uint64_t s = 1; s <= 5; ++s) {
    trace_scheduled(obs, g, OpType::AllReduce, s, 1024);
    trace_completed(obs, g, OpType::AllReduce, s, 1024, std::chrono::microseconds(50));
  }
  trace_scheduled(obs, g, OpType::Broadcast, 6, 4 << 20);
  trace_scheduled(obs, g, OpType::AllGather, 7, 64);
  trace_completed(obs, g, OpType::Broadcast, 6, 4 << 20, std::chrono::seconds(1), true);

  const std::string text = m.serialize(&live);
  EXPECT_NE(text.find("collie_collective_ops_total{backend=\"gloo\",collective=\"all_reduce\","
                      "rank=\"3\",size_class=\"le_1KiB\"} 5"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("collie_collective_bytes_total{backend=\"gloo\",collective=\"all_reduce\","
                      "rank=\"3\",size_class=\"le_1KiB\"} 5120"),
            std::string::npos);
  EXPECT_NE(text.find("collie_collective_duration_seconds_bucket{backend=\"gloo\",collective="
                      "\"all_reduce\",rank=\"3\",size_class=\"le_1KiB\",le=\"3e-05\"} 0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("le=\"0.0001\"} 5"), std::string::npos);
  EXPECT_NE(text.find("collie_collective_errors_total{backend=\"gloo\",collective=\"broadcast\","
                      "rank=\"3\",size_class=\"le_4MiB\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("collie_last_completed_seq{backend=\"gloo\",pg=\"0\",rank=\"3\"} 5"),
            std::string::npos);
  EXPECT_NE(text.find("collie_inflight_ops{backend=\"gloo\",pg=\"0\",rank=\"3\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("collie_desync_detected_total{backend=\"gloo\",rank=\"3\"} 0"),
            std::string::npos);
  for (const char* forbidden : {"seq=", "timestamp", "id="}) {
    EXPECT_EQ(text.find(forbidden), std::string::npos) << forbidden;
  }

  auto snap = live.snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].last_completed_op, "all_reduce");
  ASSERT_EQ(snap[0].inflight_ops.size(), 1u);
  EXPECT_EQ(snap[0].inflight_ops[0].seq, 7u);
  EXPECT_EQ(snap[0].inflight_ops[0].op, OpType::AllGather);
}

// A failed op counts in collie_desync_detected_total only when its error is a DesyncError (what
// the DETAIL wrapper under the tracing layer raises).
TEST(MetricsProm, DesyncErrorsCountAsDesyncs) {
  Metrics m;
  LiveStatus live;
  MetricsObserver obs(m, live);
  GroupTrace g;
  init_trace(g, 1, 2);
  trace_scheduled(obs, g, OpType::AllReduce, 1, 64);
  trace_completed(obs, g, OpType::AllReduce, 1, 64, std::chrono::milliseconds(1), true,
                  std::make_exception_ptr(TimeoutError("[Rank 1] all_reduce #1 timed out")));
  const std::string zero = "collie_desync_detected_total{backend=\"gloo\",rank=\"1\"} 0";
  EXPECT_NE(m.serialize(&live).find(zero), std::string::npos) << m.serialize(&live);
  trace_scheduled(obs, g, OpType::Broadcast, 2, 64);
  trace_completed(obs, g, OpType::Broadcast, 2, 64, std::chrono::milliseconds(1), true,
                  std::make_exception_ptr(DesyncError("Detected mismatch between collectives")));
  const std::string text = m.serialize(&live);
  EXPECT_NE(text.find("collie_desync_detected_total{backend=\"gloo\",rank=\"1\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("collie_collective_errors_total{backend=\"gloo\",collective=\"broadcast\""),
            std::string::npos);
}

// The per-op path (flight-recorder record/started/completed, metrics counters and histogram,
// live status, Inspector series) allocates nothing once the group has seen its first op.
TEST(MetricsProm, HotPathDoesNotAllocate) {
  Metrics m;
  LiveStatus live;
  InspectorMetrics inspector(InspectorMetrics::Options{});
  MetricsObserver obs(m, live, &inspector);
  FlightRecorder fr(64);
  auto g = std::make_shared<GroupTrace>();
  init_trace(*g, 0, 4);
  fr.add_group(g);
  std::vector<float> buf(1 << 16);
  auto one_op = [&](uint64_t seq) {
    OpCall c;
    c.type = seq % 2 ? OpType::AllReduce : OpType::AllGather;
    c.input = TensorView::cpu(buf.data(), 1 + seq % buf.size(), DType::Float32);
    c.output = c.input;
    c.seq = seq;
    const uint64_t id = fr.record(*g, seq, c);
    trace_scheduled(obs, *g, c.type, seq, c.input.nbytes());
    fr.mark_started(id);
    trace_completed(obs, *g, c.type, seq, c.input.nbytes(), std::chrono::microseconds(seq % 900));
    fr.mark_completed(id, false);
  };
  one_op(1);  // first sight of the group registers it (allowed to allocate)
  one_op(2);
  testing::AllocationCounter allocs;
  for (uint64_t seq = 3; seq < 3000; ++seq) one_op(seq);
  EXPECT_EQ(allocs.count(), 0);
  EXPECT_NE(
      m.serialize(&live).find("collie_last_completed_seq{backend=\"gloo\",pg=\"0\",rank=\"0\"} "
                              "2999"),
      std::string::npos);
}

TEST(MetricsProm, PromtoolAcceptsTheExposition) {
  Metrics m;
  LiveStatus live;
  MetricsObserver obs(m, live);
  GroupTrace g;
  init_trace(g, 0, 2);
  uint64_t seq = 0;
  for (OpType t : kAllOpTypes) {
    trace_scheduled(obs, g, t, ++seq, 4000);
    trace_completed(obs, g, t, seq, 4000, std::chrono::milliseconds(2));
  }
  m.record_desync("gloo");
  m.record_barrier_timeout("gloo");
  m.set_perf_result("gloo", "all_reduce", "float", 1 << 20, 1.5, 2.25);
  int rc = -1;
  const std::string out = promtool_check(m.serialize(&live), &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out, "");
  EXPECT_NE(m.serialize().find("collie_perf_busbw_gbps{backend=\"gloo\",collective=\"all_reduce\","
                               "dtype=\"float\",rank=\"0\",size_class=\"le_1MiB\"} 2.25"),
            std::string::npos);
}

TEST(MetricsProm, ConcurrentUpdatesLoseNothing) {
  Metrics m;
  const int b = m.backend_index("gloo");
  constexpr int kThreads = 4, kOps = 20000;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < kOps; ++i) {
        m.record_op(b, OpType::AllReduce, 8, std::chrono::nanoseconds(100));
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_NE(m.serialize().find(fmt::format("size_class=\"le_1KiB\"}} {}", kThreads * kOps)),
            std::string::npos);
}

}  // namespace
}  // namespace collie
