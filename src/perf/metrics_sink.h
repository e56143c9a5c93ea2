#pragma once
// A ResultSink that publishes each completed table line as the live Prometheus bandwidth gauges
// (collie_perf_algbw_gbps / collie_perf_busbw_gbps, labelled by backend, collective, dtype and
// size class; Metrics::set_perf_result) and forwards every call to the next sink. The published
// row is the out-of-place one when it was measured, else the in-place one. The backend label is
// the run's (RunMeta::backend, from run_started). `collie perf` composes it in front of its
// ReportSink on rank 0, so the perf driver itself never touches Metrics.
// Not thread-safe, like every ResultSink (the driver calls it from one thread); the Metrics
// instance may be read concurrently (it is thread-safe).
#include <string>

#include "metrics/metrics.h"
#include "perf/driver.h"

namespace collie::perf {

class MetricsSink : public ResultSink {
 public:
  // `next` (may be null: publish only) and `metrics` must outlive this sink.
  explicit MetricsSink(ResultSink* next, Metrics& metrics = Metrics::global());

  void run_started(const reports::RunMeta& meta) override;
  void collective_started(const reports::TableHeader& h) override;
  void row(const reports::ResultRow* out, const reports::ResultRow* in) override;
  void collective_finished(const std::string& collective,
                           const std::vector<reports::ResultRow>& rows,
                           const reports::Summary& summary) override;
  void note(const std::string& line) override;
  void cycle_started(int cycle, bool soak) override;
  void progress(double fraction) override;

 private:
  ResultSink* next_;
  Metrics& metrics_;
  std::string backend_;
};

}  // namespace collie::perf
