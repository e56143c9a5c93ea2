#include "metrics/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <limits>
#include <map>
#include <vector>

#include "metrics/live_status.h"

namespace collie {
namespace {

constexpr std::array<std::string_view, kNumSizeClasses> kSizeClassNames = {
    "le_1KiB", "le_4KiB", "le_16KiB", "le_64KiB", "le_256KiB",
    "le_1MiB", "le_4MiB", "le_16MiB", "le_64MiB", "gt_64MiB"};

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

ClientMetric::Label label(std::string name, std::string_view value) {
  return ClientMetric::Label{std::move(name), std::string(value)};
}

}  // namespace

int size_class_index(uint64_t bytes) {
  uint64_t bound = 1024;
  for (int i = 0; i < kNumSizeClasses - 1; ++i, bound *= 4) {
    if (bytes <= bound) return i;
  }
  return kNumSizeClasses - 1;
}

std::string_view size_class_name(int index) { return kSizeClassNames.at(index); }

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
  desync_ = &prometheus::BuildCounter()
                 .Name("collie_desync_detected_total")
                 .Help("Collectives whose fingerprints differed across ranks (COLLIE_DEBUG=DETAIL)")
                 .Register(*registry_);
  barrier_timeouts_ = &prometheus::BuildCounter()
                           .Name("collie_monitored_barrier_timeouts_total")
                           .Help("Monitored barriers that timed out waiting for ranks")
                           .Register(*registry_);
  busbw_ = &prometheus::BuildGauge()
                .Name("collie_perf_busbw_gbps")
                .Help("collie perf: bus bandwidth of the last completed size, GB/s")
                .Register(*registry_);
  algbw_ = &prometheus::BuildGauge()
                .Name("collie_perf_algbw_gbps")
                .Help("collie perf: algorithm bandwidth of the last completed size, GB/s")
                .Register(*registry_);
}

Metrics::~Metrics() = default;

Metrics& Metrics::global() {
  static Metrics* m = new Metrics();  // never destroyed: observers may run during exit
  return *m;
}

void Metrics::set_rank(int rank) { rank_.store(rank, std::memory_order_relaxed); }

int Metrics::backend_index(std::string_view backend) {
  std::lock_guard<std::mutex> lock(mu_);
  const int n = num_backends_.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i) {
    if (backend_names_[i] == backend) return i;
  }
  if (n == kMaxBackends - 1) {
    backend_names_[n] = "other";
    num_backends_.store(n + 1, std::memory_order_release);
    return n;
  }
  if (n == kMaxBackends) return n - 1;
  backend_names_[n] = std::string(backend);
  // Zero-valued series from the start, so alerts and dashboards see 0 rather than no data.
  rare_counter(*desync_, backend);
  rare_counter(*barrier_timeouts_, backend);
  num_backends_.store(n + 1, std::memory_order_release);
  return n;
}

int Metrics::find_backend(std::string_view backend) const {
  const int n = num_backends_.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (backend_names_[i] == backend) return i;
  }
  return -1;
}

Metrics::Row& Metrics::row(int backend, OpType op, uint64_t bytes) {
  const int b = backend < 0 || backend >= kMaxBackends ? kMaxBackends - 1 : backend;
  return rows_[(b * kNumOpTypes + static_cast<int>(op)) * kNumSizeClasses +
               size_class_index(bytes)];
}

void Metrics::record_op(int backend, OpType op, uint64_t bytes, std::chrono::nanoseconds duration) {
  Row& r = row(backend, op, bytes);
  const bool mine = r.owner.mine();
  r.bytes.add(mine, bytes);
  const uint64_t ns = duration.count() > 0 ? static_cast<uint64_t>(duration.count()) : 0;
  r.duration_ns.add(mine, ns);
  const double s = ns * 1e-9;
  size_t b = 0;
  while (b < kDurationBuckets.size() && s > kDurationBuckets[b]) ++b;
  r.buckets[b].add(mine, 1);
}

void Metrics::record_error(int backend, OpType op, uint64_t bytes) {
  Row& r = row(backend, op, bytes);
  r.errors.add(r.owner.mine(), 1);
}

prometheus::Counter& Metrics::rare_counter(prometheus::Family<prometheus::Counter>& f,
                                           std::string_view backend) {
  return f.Add({{"rank", std::to_string(rank())}, {"backend", std::string(backend)}});
}

void Metrics::record_desync(std::string_view backend) {
  std::lock_guard<std::mutex> lock(mu_);
  rare_counter(*desync_, backend).Increment();
}

void Metrics::record_barrier_timeout(std::string_view backend) {
  std::lock_guard<std::mutex> lock(mu_);
  rare_counter(*barrier_timeouts_, backend).Increment();
}

void Metrics::set_perf_result(std::string_view backend, std::string_view collective,
                              std::string_view dtype, uint64_t bytes, double algbw_gbps,
                              double busbw_gbps) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::map<std::string, std::string> labels = {
      {"rank", std::to_string(rank())},
      {"backend", std::string(backend)},
      {"collective", std::string(collective)},
      {"dtype", std::string(dtype)},
      {"size_class", std::string(size_class_name(size_class_index(bytes)))}};
  busbw_->Add(labels).Set(busbw_gbps);
  algbw_->Add(labels).Set(algbw_gbps);
}

std::string Metrics::serialize(const LiveStatus* live) const {
  MetricFamily ops{
      "collie_collective_ops_total", "Collectives and p2p ops completed", MetricType::Counter, {}};
  MetricFamily bytes{"collie_collective_bytes_total",
                     "Bytes of completed ops (the larger of input and output on this rank)",
                     MetricType::Counter,
                     {}};
  MetricFamily errors{"collie_collective_errors_total",
                      "Ops that failed (error or timeout)",
                      MetricType::Counter,
                      {}};
  MetricFamily duration{"collie_collective_duration_seconds",
                        "Time from start to completion of an op on this rank",
                        MetricType::Histogram,
                        {}};
  const std::string rank = std::to_string(this->rank());
  const int nb = num_backends_.load(std::memory_order_acquire);
  for (int b = 0; b < nb; ++b) {
    for (OpType op : kAllOpTypes) {
      for (int sc = 0; sc < kNumSizeClasses; ++sc) {
        const Row& r = rows_[(b * kNumOpTypes + static_cast<int>(op)) * kNumSizeClasses + sc];
        const uint64_t n_err = r.errors.load();
        std::array<uint64_t, kDurationBuckets.size() + 1> counts;
        uint64_t n = 0;
        for (size_t i = 0; i < counts.size(); ++i) {
          counts[i] = r.buckets[i].load();
          n += counts[i];
        }
        if (n == 0 && n_err == 0) continue;
        ClientMetric m;
        m.label = {label("backend", backend_names_[b]), label("collective", op_name(op)),
                   label("rank", rank), label("size_class", size_class_name(sc))};
        ClientMetric c = m;
        // Derive the count from the buckets so _count, the +Inf bucket and ops_total agree.
        c.counter.value = static_cast<double>(n);
        ops.metric.push_back(c);
        c.counter.value = static_cast<double>(r.bytes.load());
        bytes.metric.push_back(c);
        c.counter.value = static_cast<double>(n_err);
        errors.metric.push_back(c);
        ClientMetric h = m;
        h.histogram.sample_count = n;
        h.histogram.sample_sum = r.duration_ns.load() * 1e-9;
        uint64_t cumulative = 0;
        for (size_t i = 0; i < kDurationBuckets.size(); ++i) {
          cumulative += counts[i];
          h.histogram.bucket.push_back({cumulative, kDurationBuckets[i]});
        }
        h.histogram.bucket.push_back({n, std::numeric_limits<double>::infinity()});
        duration.metric.push_back(std::move(h));
      }
    }
  }
  std::vector<MetricFamily> families = {std::move(ops), std::move(bytes), std::move(errors),
                                        std::move(duration)};
  if (live != nullptr) {
    MetricFamily inflight{
        "collie_inflight_ops", "Ops started and not yet completed", MetricType::Gauge, {}};
    MetricFamily last{"collie_last_completed_seq",
                      "Sequence number of the last completed collective of the group",
                      MetricType::Gauge,
                      {}};
    for (const auto& g : live->snapshot()) {
      ClientMetric m;
      m.label = {label("backend", g.backend), label("pg", g.pg),
                 label("rank", std::to_string(g.rank))};
      m.gauge.value = static_cast<double>(g.inflight);
      inflight.metric.push_back(m);
      m.gauge.value = static_cast<double>(g.last_completed_seq);
      last.metric.push_back(m);
    }
    families.push_back(std::move(inflight));
    families.push_back(std::move(last));
  }
  for (auto& f : registry_->Collect()) families.push_back(std::move(f));
  // A family with no samples would expose HELP/TYPE lines alone; leave it out until it has one.
  std::erase_if(families, [](const MetricFamily& f) { return f.metric.empty(); });
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace collie
