// MetricsSink (src/perf/metrics_sink.h): the perf gauges come from the result sink, and every call
// reaches the next sink unchanged.
#include "perf/metrics_sink.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace collie::perf {
namespace {

struct Recorder : ResultSink {
  std::vector<std::string> calls;
  std::vector<std::pair<const reports::ResultRow*, const reports::ResultRow*>> rows;
  void run_started(const reports::RunMeta& m) override { calls.push_back("run " + m.backend); }
  void collective_started(const reports::TableHeader& h) override {
    calls.push_back("start " + h.collective);
  }
  void row(const reports::ResultRow* out, const reports::ResultRow* in) override {
    calls.push_back("row");
    rows.emplace_back(out, in);
  }
  void collective_finished(const std::string& c, const std::vector<reports::ResultRow>& rows,
                           const reports::Summary&) override {
    calls.push_back("finished " + c + " " + std::to_string(rows.size()));
  }
  void note(const std::string& line) override { calls.push_back("note " + line); }
  void cycle_started(int cycle, bool soak) override {
    calls.push_back("cycle " + std::to_string(cycle) + (soak ? " soak" : ""));
  }
  void progress(double f) override { calls.push_back("progress " + std::to_string(f)); }
};

reports::ResultRow row(const std::string& placement, double algbw, double busbw) {
  reports::ResultRow r;
  r.collective = "all_reduce";
  r.placement = placement;
  r.dtype = "float";
  r.size_bytes = 4096;  // size class le_4KiB
  r.algbw_gbps = algbw;
  r.busbw_gbps = busbw;
  return r;
}

const std::string kLabels =
    "{backend=\"gloo\",collective=\"all_reduce\",dtype=\"float\",rank=\"3\","
    "size_class=\"le_4KiB\"} ";

TEST(PerfMetricsSink, PublishesOutOfPlaceElseInPlace) {
  Metrics m;
  m.set_rank(3);
  Recorder next;
  MetricsSink sink(&next, m);
  reports::RunMeta meta;
  meta.backend = "gloo";
  sink.run_started(meta);
  EXPECT_EQ(m.serialize().find("collie_perf_busbw_gbps{"), std::string::npos);

  const reports::ResultRow out = row("out", 1.5, 2.25), in = row("in", 3.5, 4.75);
  sink.row(&out, &in);
  std::string s = m.serialize();
  EXPECT_NE(s.find("collie_perf_algbw_gbps" + kLabels + "1.5\n"), std::string::npos) << s;
  EXPECT_NE(s.find("collie_perf_busbw_gbps" + kLabels + "2.25\n"), std::string::npos) << s;

  sink.row(nullptr, &in);
  s = m.serialize();
  EXPECT_NE(s.find("collie_perf_algbw_gbps" + kLabels + "3.5\n"), std::string::npos) << s;
  EXPECT_NE(s.find("collie_perf_busbw_gbps" + kLabels + "4.75\n"), std::string::npos) << s;

  sink.row(nullptr, nullptr);  // nothing measured: the gauges keep their values
  EXPECT_EQ(m.serialize(), s);

  ASSERT_EQ(next.rows.size(), 3u);
  EXPECT_EQ(next.rows[0], std::make_pair(&out, &in));
  EXPECT_EQ(next.rows[1], std::make_pair(static_cast<const reports::ResultRow*>(nullptr), &in));
  EXPECT_EQ(next.rows[2], std::make_pair(static_cast<const reports::ResultRow*>(nullptr),
                                         static_cast<const reports::ResultRow*>(nullptr)));
}

TEST(PerfMetricsSink, ForwardsEveryCallInOrder) {
  Metrics m;
  Recorder next;
  MetricsSink sink(&next, m);
  reports::RunMeta meta;
  meta.backend = "mpi";
  reports::TableHeader h;
  h.collective = "broadcast";
  const std::vector<reports::ResultRow> rows(2);
  sink.run_started(meta);
  sink.cycle_started(3, true);
  sink.collective_started(h);
  sink.note("# hi");
  sink.row(nullptr, nullptr);
  sink.progress(0.5);
  sink.collective_finished("broadcast", rows, reports::Summary{});
  EXPECT_EQ(next.calls,
            (std::vector<std::string>{"run mpi", "cycle 3 soak", "start broadcast", "note # hi",
                                      "row", "progress 0.500000", "finished broadcast 2"}));
}

TEST(PerfMetricsSink, PublishesWithoutANextSink) {
  Metrics m;
  m.set_rank(3);
  MetricsSink sink(nullptr, m);
  reports::RunMeta meta;
  meta.backend = "gloo";
  sink.run_started(meta);
  const reports::ResultRow out = row("out", 1.5, 2.25);
  sink.row(&out, nullptr);
  sink.note("# ignored");
  EXPECT_NE(m.serialize().find("collie_perf_busbw_gbps" + kLabels + "2.25\n"), std::string::npos);
}

}  // namespace
}  // namespace collie::perf
