#pragma once
// Cluster view: fetch every rank's /v1/status (addresses from the store key debug_server/<rank>)
// in parallel, each bounded by a per-rank timeout, and analyze the live data: which ranks have
// not joined the newest collective (stragglers), which have an op in flight too long (stalled),
// which could not be reached. Partial results are normal: an unreachable rank is a finding.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/timeout.h"

namespace collie {

class Store;

struct RankView {
  int rank = 0;
  bool reachable = false;
  std::string url;
  std::string error;      // why unreachable ("no address in the store", "timed out", ...)
  nlohmann::json status;  // the rank's /v1/status when reachable
};

struct ClusterView {
  int world_size = 0;
  std::vector<RankView> ranks;  // one per rank, in rank order
  double elapsed_s = 0;
};

// Returns within `per_rank_timeout` plus a small margin even if ranks hang: requests still
// running at the deadline are abandoned (they end on their own timeouts) and marked unreachable.
// `self` (this rank's own status) is used as is instead of calling our own server.
ClusterView fetch_cluster(Store& store, int world_size, Millis per_rank_timeout,
                          const std::string& token, int self_rank, nlohmann::json self);

// {ranks: [{rank, state: ok|behind|straggler|stalled|unreachable, reasons: [...]}],
//  findings: ["Not all ranks joining collective, sequence number: 12 (pg 0): missing ranks 2",
//             ...], unreachable: [ranks], summary: "..."}
nlohmann::json analyze_cluster(const ClusterView& view, double stall_after_s);

nlohmann::json cluster_json(const ClusterView& view, const nlohmann::json& analysis);

// Self-contained HTML page (inline CSS/JS, no external assets) with the cluster table rendered
// server-side; its script refreshes the table from /v1/cluster/status every `refresh_ms`.
std::string render_cluster_page(const ClusterView& view, const nlohmann::json& analysis,
                                int self_rank, int refresh_ms);

}  // namespace collie
