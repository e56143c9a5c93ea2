#include "metrics/inspector_metrics.h"

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <vector>

#include "core/env.h"
#include "core/log.h"
#include "debug/flight_recorder.h"
#include "discovery/launch_env.h"
#include "metrics/group_hosts.h"
#include "metrics/inspector_format.h"

namespace collie {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Inspector's label "version": its Prometheus format ("v<profiler interface>.<format minor>").
constexpr const char* kInspectorFormatVersion = "v5.1";
// collie has no NCCL algorithm/protocol: Inspector's "<algo>_<proto>" with both unknown.
constexpr const char* kUnknownAlgoProto = "unknown_unknown";

// A series' key, never 0: bits [63..52] group slot + 1, [51..44] op, [43..41] the size's unit
// u (B..TB), [40..0] the bucket's lower bound in that unit (< 1024 below TB, < 2^24 in TB).
uint64_t make_key(int slot, OpType op, uint64_t bytes) {
  const int unit = inspector_size_unit(bytes);
  return (uint64_t(slot + 1) << 52) | (uint64_t(op) << 44) | (uint64_t(unit) << 41) |
         (bytes >> (10 * unit));
}
int key_slot(uint64_t key) { return static_cast<int>(key >> 52) - 1; }
OpType key_op(uint64_t key) { return static_cast<OpType>((key >> 44) & 0xff); }
uint64_t key_bucket(uint64_t key) {
  const int unit = static_cast<int>((key >> 41) & 0x7);
  return (key & ((uint64_t{1} << 41) - 1)) << (10 * unit);
}

ClientMetric::Label label(std::string name, std::string value) {
  return ClientMetric::Label{std::move(name), std::move(value)};
}

}  // namespace

InspectorMetrics::Options InspectorMetrics::options_from_env(const Env& env) {
  Options o;
  if (auto w = env.get("COLLIE_INSPECTOR_WINDOW"); w && !w->empty()) {
    try {
      o.window = parse_duration(*w);
    } catch (const std::exception& x) {
      // Read while the library loads, where a throw would abort the process.
      log(LogLevel::Warning, "COLLIE_INSPECTOR_WINDOW={} ignored ({}); using 30s", *w, x.what());
    }
  }
  o.cluster = env.get("COLLIE_CLUSTER").value_or("");
  if (auto j = env.first_of({"COLLIE_JOB_ID", "SLURM_JOB_ID"})) o.slurm_job_id = *j;
  o.node = local_host_name();
  try {
    o.local_rank = detect_launch_env(env).local_rank.value_or(0);
  } catch (const std::exception&) {
    // Contradicting launcher variables: init_process_group reports them; no abort at load.
  }
  auto hosts = std::make_shared<GroupHosts>();
  o.node_count = [hosts](const GroupTrace& g) { return hosts->node_count(g); };
  return o;
}

InspectorMetrics::InspectorMetrics(Options opts) : opts_(std::move(opts)) {}

InspectorMetrics& InspectorMetrics::global() {
  // Never destroyed: observers may run during exit.
  static InspectorMetrics* m = new InspectorMetrics(options_from_env(Env::process()));
  return *m;
}

InspectorMetrics::Slot* InspectorMetrics::find_or_claim(uint64_t key) {
  size_t i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 40) % kMaxSeries;
  for (int probe = 0; probe < kMaxSeries; ++probe, i = (i + 1) % kMaxSeries) {
    uint64_t k = slots_[i].key.load(std::memory_order_acquire);
    if (k == key) return &slots_[i];
    if (k == 0) {
      if (slots_[i].key.compare_exchange_strong(k, key, std::memory_order_acq_rel)) {
        return &slots_[i];
      }
      if (k == key) return &slots_[i];  // another thread claimed it for the same series
    }
  }
  return nullptr;
}

void InspectorMetrics::record(int group_slot, const GroupTrace& g, OpType op, uint64_t input_bytes,
                              std::chrono::nanoseconds exec) {
  if (group_slot < 0 || group_slot >= kMaxGroups || inspector_op_name(op).empty()) return;
  if (groups_[group_slot].load(std::memory_order_acquire) == nullptr) {
    const GroupTrace* none = nullptr;
    groups_[group_slot].compare_exchange_strong(none, &g, std::memory_order_acq_rel);
  }
  const int nranks = g.global_ranks.empty() ? 1 : static_cast<int>(g.global_ranks.size());
  const uint64_t bytes = inspector_message_bytes(op, input_bytes, nranks);
  Slot* s = find_or_claim(make_key(group_slot, op, bytes));
  if (s == nullptr) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint64_t ns = exec.count() > 0 ? static_cast<uint64_t>(exec.count()) : 0;
  const bool mine = s->owner.mine();
  s->exec_ns.add(mine, ns);
  const double busbw = inspector_bus_bandwidth_gbs(op, bytes, nranks, ns * 1e-3);
  if (busbw > 0) {
    s->bus_log_sum.add(mine, std::log(busbw));
    s->bus_count.add(mine, 1);
  }
  s->count.add(mine, 1, std::memory_order_release);
}

std::string InspectorMetrics::serialize(int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (window_start_ns_ == 0) {
    window_start_ns_ = now_ns;  // the first window ends at least `window` after the first scrape
  } else if (now_ns - window_start_ns_ >=
             std::chrono::duration_cast<std::chrono::nanoseconds>(opts_.window).count()) {
    for (int i = 0; i < kMaxSeries; ++i) {
      if (slots_[i].key.load(std::memory_order_acquire) == 0) continue;
      Totals now;
      now.count = slots_[i].count.load(std::memory_order_acquire);
      now.exec_ns = slots_[i].exec_ns.load();
      now.bus_count = slots_[i].bus_count.load();
      now.bus_log_sum = slots_[i].bus_log_sum.load();
      const Totals& then = at_window_start_[i];
      last_window_[i] = Totals{now.count - then.count, now.exec_ns - then.exec_ns,
                               now.bus_count - then.bus_count, now.bus_log_sum - then.bus_log_sum};
      at_window_start_[i] = now;
    }
    window_start_ns_ = now_ns;
  }

  MetricFamily coll_bw{"nccl_bus_bandwidth_gbs",
                       "NCCL Inspector: geometric mean bus bandwidth of the collectives of the "
                       "last window, GB/s",
                       MetricType::Gauge,
                       {}};
  MetricFamily coll_time{"nccl_collective_exec_time_microseconds",
                         "NCCL Inspector: mean execution time of the collectives of the last "
                         "window, microseconds",
                         MetricType::Gauge,
                         {}};
  MetricFamily p2p_bw{"nccl_p2p_bus_bandwidth_gbs",
                      "NCCL Inspector: geometric mean bus bandwidth of the p2p ops of the last "
                      "window, GB/s",
                      MetricType::Gauge,
                      {}};
  MetricFamily p2p_time{"nccl_p2p_exec_time_microseconds",
                        "NCCL Inspector: mean execution time of the p2p ops of the last window, "
                        "microseconds",
                        MetricType::Gauge,
                        {}};
  for (int i = 0; i < kMaxSeries; ++i) {
    const Totals& w = last_window_[i];
    if (w.count == 0) continue;
    const uint64_t key = slots_[i].key.load(std::memory_order_acquire);
    const GroupTrace* g = groups_[key_slot(key)].load(std::memory_order_acquire);
    if (g == nullptr) continue;
    const std::optional<int> nodes = opts_.node_count ? opts_.node_count(*g) : std::optional<int>();
    if (!nodes) continue;
    const OpType op = key_op(key);
    const bool p2p = is_p2p(op);
    ClientMetric m;
    m.label = {
        label("version", kInspectorFormatVersion),
        label("slurm_job_id", opts_.slurm_job_id),
        label("node", opts_.node),
        label("gpu", g->backend == "nccl" ? "GPU" + std::to_string(opts_.local_rank) : "CPU"),
        label("comm_name", g->desc.empty() ? g->pg_id : g->desc),
        label("n_nodes", std::to_string(*nodes)),
        label("nranks", std::to_string(g->global_ranks.empty() ? 1 : g->global_ranks.size())),
        label(p2p ? "p2p_operation" : "collective", std::string(inspector_op_name(op))),
        label("message_size", inspector_message_size(key_bucket(key)))};
    if (!p2p) m.label.push_back(label("algo_proto", kUnknownAlgoProto));
    if (!opts_.cluster.empty()) m.label.push_back(label("cluster", opts_.cluster));
    ClientMetric bw = m;
    bw.gauge.value = w.bus_count ? std::exp(w.bus_log_sum / w.bus_count) : 0.0;
    m.gauge.value = static_cast<double>(w.exec_ns) * 1e-3 / w.count;
    (p2p ? p2p_bw : coll_bw).metric.push_back(std::move(bw));
    (p2p ? p2p_time : coll_time).metric.push_back(std::move(m));
  }
  MetricFamily dropped{"collie_inspector_dropped_ops_total",
                       "Ops left out of the Inspector series because their table was full",
                       MetricType::Counter,
                       {}};
  ClientMetric d;
  d.counter.value = static_cast<double>(dropped_ops());
  dropped.metric.push_back(d);
  std::vector<MetricFamily> families;
  for (auto* f : {&coll_bw, &coll_time, &p2p_bw, &p2p_time, &dropped}) {
    if (!f->metric.empty()) families.push_back(std::move(*f));
  }
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace collie
