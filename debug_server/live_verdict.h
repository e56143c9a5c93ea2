#pragma once
// Verdicts read from a LiveSummary (live_summary.h), written for any N: every set of ranks as
// ranges and hosts ("ranks 4100-4131 on hosts node[517-520] have not joined all_reduce #812;
// the other 16,352 wait in it for 41.9 s"), the lagging set named rather than the minority
// (NVIDIA/nccl#1911), the same in text and JSON, never a line or an array entry per rank.
// Findings, by kind:
//   NOT_JOINED      a group's front has waited in a collective for stall_after_s while these
//                   ranks, idle (or stuck in an older op) as long, never reached it: culprits
//   STRAGGLING      the same, but these ranks made progress within stall_after_s: behind, still
//                   moving; not culprits
//   STUCK           every answering member waits in the same collective for stall_after_s and
//                   none is behind (look at the ranks that did not answer, or the network)
//   COLLECTIVE_TYPE_MISMATCH  ranks in flight at the same sequence number run different
//                   collectives: the ranks of the less common op are the culprits (at once)
//   UNREACHABLE     asked, and no answer (no_answer, error): culprits
//   NO_ADDRESS      no debug-server address in the store: culprits (never started one?)
//   NOT_REACHED     not asked (below a rank that did not answer, or its address not read yet):
//                   their state is unknown; not culprits
// Pure functions; thread-safe.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/rank_ranges.h"
#include "debug_server/live_summary.h"

namespace collie {

struct LiveFinding {
  std::string kind{};
  std::string pg{};  // "" for findings about ranks, not a group
  bool culprit = false;
  RankRanges ranks{};
  std::string hosts{};  // compressed hostlist of the ranks named ("" unknown)
  std::string message{};
};

struct LiveReport {
  int world_size = 0;
  double stall_after_s = 0;
  double elapsed_s = 0;             // the query's wall time, when the caller sets it
  std::vector<std::string> groups;  // one line per group: where its ranks are
  std::vector<LiveFinding> findings;
  RankRanges culprits;
  std::string summary;  // one line
};

LiveReport judge_live(const LiveSummary& s, double stall_after_s);

// "ranks 4100-4131 on hosts node[517-520]", "rank 7", "16,352 ranks" (`count_only`).
std::string describe_ranks(const RankRanges& r, const std::vector<std::string>& hosts,
                           bool hosts_truncated);

// The report as text: a head line (answered, levels, time), one line per group, the findings,
// the culprits. Untrusted names in it are printable (they were made so when read).
std::string live_text(const LiveReport& r, const LiveSummary& s);
// {world_size, live, stall_after_s, elapsed_s, levels, requests, answered, missing, groups,
//  findings, culprits, summary}: rank sets as {count, text, ranges: [[first, last], ...],
//  truncated}, hosts as a hostlist string.
nlohmann::json live_json(const LiveReport& r, const LiveSummary& s);
// A rank set as above.
nlohmann::json ranks_value(const RankRanges& r);

}  // namespace collie
