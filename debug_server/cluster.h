#pragma once
// Cluster view: the live-status tree's summary of the world (live_tree.h; verdicts by
// live_verdict.h), plus the status and flight recorder of the ranks it names: of every rank in a
// world of at most kFullViewRanks, where the hang analyzer (debug/analyzer.h, the one
// `collie analyze DUMP_DIR` uses) runs on the live dumps with the ranks that did not answer as
// live evidence. Partial results are normal: an unreachable rank is a finding.
// Fetches run on the calling thread (http::run_all): no thread per rank.
// Thread safety: pure functions over their arguments.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/timeout.h"
#include "debug/analyzer.h"
#include "debug_server/live_tree.h"
#include "debug_server/live_verdict.h"

namespace collie {

class Store;

// The cluster view analyzes the newest entries of each rank's ring (/v1/flight_recorder?entries=):
// the recent past is where a hang is, and it keeps a refresh cheap for every rank.
inline constexpr size_t kClusterViewEntries = 512;
// The most the fan-out reads from one rank: its /v1/status and its dump of kClusterViewEntries
// entries (a real one is well under 1 MiB); a rank sending more is marked unreachable.
inline constexpr size_t kMaxFanoutStatusBytes = size_t{1} << 20;
inline constexpr size_t kMaxFanoutDumpBytes = size_t{16} << 20;
// Worlds up to this size get every rank's status and flight recorder (and the hang analyzer's
// report); larger ones the summary and the status of at most kDetailRanks ranks it names.
inline constexpr int kFullViewRanks = 64;
inline constexpr size_t kDetailRanks = 16;

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
  std::vector<RankView> ranks;  // one per rank fetched, in rank order
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

// The status (and, with `dumps`, the flight recorder) of `ranks` of a world of `world_size`: the
// addresses read from the store in one batch, then every request at once, each rank's bounded
// by `per_rank_timeout` from when the lookup ended (a slow store delays the answer, never makes a
// rank unreachable), reading at most kMaxFanout*Bytes, stopped within 50 ms once the timeout
// passed. `token` goes only to addresses read from a store whose writers are the job's members
// (Store::members_only); otherwise no token is sent and a rank that answers 401 says why.
// `self`: this process's own rank, used as is.
ClusterView fetch_ranks(Store& store, int world_size, const std::vector<int>& ranks, bool dumps,
                        Millis per_rank_timeout, const std::string& token, const SelfData* self);
// Every rank, status and flight recorder.
ClusterView fetch_cluster(Store& store, int world_size, Millis per_rank_timeout,
                          const std::string& token, const SelfData* self);

// The tree's options for a query through `store`'s addresses (the token rule above).
TreeQueryOptions tree_options(Store& store, int world_size, Millis level, const std::string& token);

// What the cluster view shows: the tree's summary, its verdicts, the ranks it names, and, for a
// world of at most kFullViewRanks, the hang analyzer's report on every rank's flight recorder.
struct LiveView {
  LiveSummary summary;
  LiveReport report;
  ClusterView details;               // the ranks named (every rank of a small world)
  std::optional<Analysis> analysis;  // small worlds only
  double elapsed_s = 0;
};
// `tree`: this process's own tree node (rank 0 with its summary) or a querier's (rank 0 asked);
// `level`: per tree level and per detail rank. Returns when both are done.
LiveView live_view(Store& store, TreeQuery& tree, int world_size, Millis level,
                   double stall_after_s, const std::string& token, const SelfData* self);
// The ranks a report names, worth a closer look (culprits that answered first, then the other
// findings', then one rank of each place of the first group), at most `max`.
std::vector<int> named_ranks(const LiveReport& r, const LiveSummary& s, size_t max);
// "rank 7 on node3 (pid 41): group 0 in all_reduce #12 for 3.1 s, last completed ..." from a
// rank's /v1/status, or why it is unreachable.
std::string detail_line(const RankView& v);

// collie::analyze on the reachable ranks' dumps (live: ops younger than stall_after_s are not
// problems), the unreachable ranks given as live evidence.
Analysis analyze_cluster(const ClusterView& view, double stall_after_s);

// {world_size, elapsed_s, live: live_json(...), ranks: [{rank, reachable, url, state, reasons,
//  status | error}] (the detail ranks), analysis: to_json_value(analysis) or null}
nlohmann::json cluster_json(const LiveView& v);

// Self-contained HTML page (inline CSS/JS, no external assets) with the cluster table rendered
// server-side; its script refreshes the table every `refresh_ms` from /v1/cluster/status with the
// page's own query (timeout_ms, stall_ms), so both renderings use the same settings.
std::string render_cluster_page(const LiveView& v, int self_rank, int refresh_ms);

}  // namespace collie
