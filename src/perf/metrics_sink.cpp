#include "perf/metrics_sink.h"

#include <cstdint>

namespace collie::perf {

MetricsSink::MetricsSink(ResultSink* next, Metrics& metrics) : next_(next), metrics_(metrics) {}

void MetricsSink::run_started(const reports::RunMeta& meta) {
  backend_ = meta.backend;
  if (next_) next_->run_started(meta);
}

void MetricsSink::collective_started(const reports::TableHeader& h) {
  if (next_) next_->collective_started(h);
}

void MetricsSink::row(const reports::ResultRow* out, const reports::ResultRow* in) {
  const reports::ResultRow* r = out != nullptr ? out : in;
  if (r != nullptr && !r->collective.empty()) {
    metrics_.set_perf_result(backend_, r->collective, r->dtype,
                             static_cast<uint64_t>(r->size_bytes), r->algbw_gbps, r->busbw_gbps);
  }
  if (next_) next_->row(out, in);
}

void MetricsSink::collective_finished(const std::string& collective,
                                      const std::vector<reports::ResultRow>& rows,
                                      const reports::Summary& summary) {
  if (next_) next_->collective_finished(collective, rows, summary);
}

void MetricsSink::note(const std::string& line) {
  if (next_) next_->note(line);
}

void MetricsSink::cycle_started(int cycle, bool soak) {
  if (next_) next_->cycle_started(cycle, soak);
}

void MetricsSink::progress(double fraction) {
  if (next_) next_->progress(fraction);
}

}  // namespace collie::perf
