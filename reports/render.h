#pragma once
// `collie report render`: several result files side by side as Markdown, JUnit XML, the
// nccl-tests table or CSV (the HTML report is html_report.h). Pure functions of the loaded runs.
// Thread-safe.
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "reports/load.h"

namespace collie::reports {

// One curve: the rows of one collective / dtype / op / placement / root across sizes.
struct SeriesKey {
  std::string collective, dtype, redop, placement;
  int root = -1;
  auto tie() const { return std::tie(collective, dtype, redop, placement, root); }
  bool operator<(const SeriesKey& o) const { return tie() < o.tie(); }
};
// "all_reduce float sum out-of-place" (+ " root N" for rooted collectives).
std::string series_title(const SeriesKey& k);

struct SeriesTable {
  SeriesKey key;
  std::vector<int64_t> sizes;                        // union over the runs, ascending
  std::vector<std::map<int64_t, ResultRow>> by_run;  // per run: size -> row (cycles combined)
};
// Series in first-seen order over `runs`; by_run has one entry per run (empty maps allowed).
std::vector<SeriesTable> series_tables(const std::vector<LoadedRun>& runs);

// Per rank: mean over rows of (rank time / median rank time of the row). Empty when the rows
// carry no per-rank times. 1.0 = typical; 1.3 = 30 % slower than the median rank.
std::vector<double> per_rank_ratio(const RunResult& r);

std::string render_markdown(const std::vector<LoadedRun>& runs);
// One <testsuite> per run and collective, one <testcase> per row; wrong data is a <failure>,
// an interrupted run an <error>.
std::string render_junit(const std::vector<LoadedRun>& runs);
// The nccl-tests table (byte-compatible rows) for each run, separated by '#' comment headers.
std::string render_table(const std::vector<LoadedRun>& runs);
// CsvWriter's columns; with several runs a leading "source" column holds the run's label.
std::string render_csv(const std::vector<LoadedRun>& runs);

}  // namespace collie::reports
