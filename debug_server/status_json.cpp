#include "debug_server/status_json.h"

#include <unistd.h>

#include "comm/registry.h"
#include "core/env_snapshot.h"
#include "core/log.h"
#include "discovery/network_choices.h"
#include "metrics/live_status.h"

namespace collie {
namespace {}  // namespace

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

nlohmann::json groups_json(const std::vector<LiveStatus::GroupSnapshot>& snapshot) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : snapshot) {
    nlohmann::json inflight = nlohmann::json::array();
    for (const auto& op : g.inflight_ops) {
      inflight.push_back({{"op", op_name(op.op)},
                          {"seq", op.seq},
                          {"p2p", op.p2p},
                          {"bytes", op.bytes},
                          {"age_s", op.age_s}});
    }
    groups.push_back({{"pg", g.pg},
                      {"desc", g.desc},
                      {"backend", g.backend},
                      {"group_rank", g.group_rank},
                      {"size", g.size},
                      {"last_enqueued_seq", g.last_enqueued_seq},
                      {"last_started_seq", g.last_started_seq},
                      {"last_completed_seq", g.last_completed_seq},
                      {"last_completed_op", g.last_completed_op},
                      {"last_enqueued_p2p_seq", g.last_enqueued_p2p_seq},
                      {"last_completed_p2p_seq", g.last_completed_p2p_seq},
                      {"ops_completed", g.ops_completed},
                      {"ops_failed", g.ops_failed},
                      {"inflight_count", g.inflight},
                      {"since_last_progress_s", g.since_last_progress_s},
                      {"inflight", std::move(inflight)}});
  }
  return groups;
}

nlohmann::json status_json(const DebugServerOptions& opts, const LiveStatus& live,
                           const std::string& url) {
  return {{"rank", opts.rank},
          {"world_size", opts.world_size},
          {"local_rank", opts.local_rank},
          {"host", host_name()},
          {"pid", static_cast<int64_t>(getpid())},
          {"backend", opts.backend},
          {"url", url},
          {"groups", groups_json(live.snapshot())}};
}

nlohmann::json config_json(const DebugServerOptions& opts) {
  nlohmann::json backends = nlohmann::json::array();
  for (const auto* b : collie::backends()) {
    backends.push_back({{"name", b->name}, {"version", b->version}});
  }
  nlohmann::json env = nlohmann::json::object();
  for (const EnvEntry& e : run_env(process_environ())) env[e.name] = e.value;
  // What this rank bound and how it found the others (discovery/network_choices.h).
  nlohmann::json network = nlohmann::json::object();
  for (const auto& c : network_choices()) {
    network[c.what] = {{"value", c.value}, {"reason", c.reason}};
  }
  return {{"version", COLLIE_VERSION},
          {"backends", std::move(backends)},
          {"backend", opts.backend},
          {"debug_level", debug_level_name(debug_level())},
          {"log_level", log_level_name(log_level())},
          {"group_timeout_ms", opts.group_timeout.count()},
          {"fanout_timeout_ms", opts.fanout_timeout.count()},
          {"stall_after_s", opts.stall_after_s},
          {"network", std::move(network)},
          {"env", std::move(env)}};
}

}  // namespace collie
