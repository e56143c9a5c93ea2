#pragma once
// Cluster view: fetch every rank's /v1/status and /v1/flight_recorder (addresses from the store
// key debug_server/<rank>) in parallel, each rank bounded by a per-rank timeout, and run the hang
// analyzer (debug/analyzer.h, the one `collie analyze DUMP_DIR` uses) on the live dumps, with the
// ranks that did not answer as live evidence. Partial results are normal: an unreachable rank is
// a finding.
// Thread safety: pure functions over their arguments (fetch_cluster may leave detached fetch
// threads behind for ranks that did not answer in time; they stop within 50 ms of its return).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/timeout.h"
#include "debug/analyzer.h"

namespace collie {

class Store;

// The cluster view analyzes the newest entries of each rank's ring (/v1/flight_recorder?entries=):
// the recent past is where a hang is, and it keeps a refresh cheap for every rank.
inline constexpr size_t kClusterViewEntries = 512;
// The most the fan-out reads from one rank: its /v1/status and its dump of kClusterViewEntries
// entries (a real one is well under 1 MiB); a rank sending more is marked unreachable.
inline constexpr size_t kMaxFanoutStatusBytes = size_t{1} << 20;
inline constexpr size_t kMaxFanoutDumpBytes = size_t{16} << 20;

struct RankView {
  int rank = 0;
  bool reachable = false;
  std::string url;
  std::string error;             // why unreachable ("no address in the store", "timed out", ...)
  nlohmann::json status;         // the rank's /v1/status when reachable
  std::optional<RankDump> dump;  // its /v1/flight_recorder when reachable
};

struct ClusterView {
  int world_size = 0;
  std::vector<RankView> ranks;  // one per rank, in rank order
  double elapsed_s = 0;
};

// The calling rank's own data, used as is instead of calling our own server.
struct SelfData {
  int rank = -1;
  nlohmann::json status;
  std::string flight_recorder;  // FlightRecorder::dump_json text
};

// True when `url` is exactly what a rank publishes under debug_server/<rank>: http://HOST:PORT
// with a plain host name or IP (no user@, path, query or fragment) and a port in 1..65535;
// otherwise false and `why` says what is wrong. fetch_cluster contacts (and sends the token to)
// only such addresses; which ones exist is decided by who may write the store (the job's
// members, when the store requires COLLIE_STORE_SECRET).
bool is_member_url(const std::string& url, std::string* why);
struct MemberAddress {
  std::string host;  // without [] for IPv6
  int port = 0;
};
// The same check, returning the address; nullopt (and `why`) for anything else.
std::optional<MemberAddress> member_address(const std::string& url, std::string* why);

// Returns within `per_rank_timeout` plus a small margin even if ranks hang: each rank's two
// requests share that deadline, read at most kMaxFanout*Bytes, and stop within 50 ms once this
// returns; ranks not done by then are marked unreachable. `token` goes only to addresses read
// from a store whose writers are the job's members (Store::members_only); otherwise no token is
// sent and a rank that answers 401 says why.
ClusterView fetch_cluster(Store& store, int world_size, Millis per_rank_timeout,
                          const std::string& token, const SelfData* self);

// collie::analyze on the reachable ranks' dumps (live: ops younger than stall_after_s are not
// problems), the unreachable ranks given as live evidence.
Analysis analyze_cluster(const ClusterView& view, double stall_after_s);

// {world_size, elapsed_s, ranks: [{rank, reachable, url, state, reasons, status | error}],
//  analysis: to_json_value(analysis)}
nlohmann::json cluster_json(const ClusterView& view, const Analysis& analysis);

// Self-contained HTML page (inline CSS/JS, no external assets) with the cluster table rendered
// server-side; its script refreshes the table every `refresh_ms` from /v1/cluster/status with the
// page's own query (timeout_ms, stall_ms), so both renderings use the same settings.
std::string render_cluster_page(const ClusterView& view, const Analysis& analysis, int self_rank,
                                int refresh_ms);

}  // namespace collie
