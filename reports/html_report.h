#pragma once
// The self-contained HTML report: one file, inline CSS and SVG, no scripts and no network
// access needed to view it. Sections: run metadata side by side, per collective a bus-bandwidth
// and a latency chart against size (one line per run and dtype/op/placement), the per-rank view
// (time of each rank relative to the median rank, stragglers in red, plus a per-size heat
// table), and the raw numbers. Deterministic output. Pure function; thread-safe.
#include <string>
#include <vector>

#include "reports/load.h"

namespace collie::reports {

// REQUIRES: !runs.empty().
std::string render_html(const std::vector<LoadedRun>& runs);

}  // namespace collie::reports
