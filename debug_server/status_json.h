#pragma once
// JSON documents served by one rank: /v1/status and /v1/config. Built from lock-free snapshots
// (LiveStatus), never from the backend, so serving them cannot delay a collective.
#include <nlohmann/json.hpp>

#include "debug_server/server.h"
#include "metrics/live_status.h"

namespace collie {

// {rank, world_size, host, pid, backend, url, groups: [{pg, desc, backend, group_rank, size,
//  last_enqueued_seq, last_started_seq, last_completed_seq, last_completed_op, ...,
//  inflight: [{op, seq, p2p, bytes, age_s}]}]}
nlohmann::json status_json(const DebugServerOptions& opts, const LiveStatus& live,
                           const std::string& url);
// The "groups" of /v1/status from a LiveStatus snapshot.
nlohmann::json groups_json(const std::vector<LiveStatus::GroupSnapshot>& groups);

// {version, backends: [{name, version}], debug_level, log_level, group_timeout_ms,
//  network: {rendezvous|store_bind|gloo: {value, reason}}, env: {...}}
// env: the run's variables (core/env_snapshot.h), credentials' values "<redacted>".
nlohmann::json config_json(const DebugServerOptions& opts);

std::string host_name();

}  // namespace collie
