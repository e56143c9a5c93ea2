#pragma once
// What the analyzer's files share (internal to src/debug): naming sets of ranks and hosts in
// messages (analyzer_report.cpp) and the job-wide checks (analyzer_job.cpp).
// Thread safety: pure functions.
#include <string>
#include <vector>

#include "debug/analyzer.h"
#include "debug/analyzer_fold.h"

namespace collie {

// The ranks as format_ranks writes them ("0-3, 5"), cut after about 200 characters (", ...").
std::string capped_ranks(const std::vector<int>& sorted_ranks);
// rank_word while the list is short, else "16,352 ranks": for sets a message names for context
// (who joined, who called the majority's op), never the set it blames.
std::string set_text(const std::vector<int>& sorted_ranks);
// "; rank 2 is on host node7" (or "ranks ... are on hosts ..."), "" when no host is known: the
// host of a culprit named in a one-line message shaped as torch's.
std::string host_note(const Analysis& a, const std::vector<int>& sorted_ranks);

// The world size of a set of dumps: the size most of them claim (ties: the smaller, which
// names no rank that may not exist); when none claims one (0: written before the world group
// existed), the highest rank with a dump + 1. Dumps claiming another size are one finding.
int agreed_world_size(const std::vector<fold::RankInfo>& ranks, std::vector<Finding>& findings);
// Notes: clocks that stepped back, how far apart the dumps were taken, the threshold in force.
void note_dump_times(const std::vector<fold::RankInfo>& ranks, Analysis& a);
// UNREACHABLE (live) and MISSING_DUMP findings for the ranks below a.world_size without a dump.
void report_absent_ranks(Analysis& a, const std::vector<UnreachableRank>& unreachable);
// Rings that wrapped: a note for requested dumps and live views, a finding for failure dumps.
void report_wrapped_rings(const std::vector<fold::RankInfo>& ranks, Analysis& a);

}  // namespace collie
