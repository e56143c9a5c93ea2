#pragma once
// The per-format readers behind read_evidence (evidence.h). Each fills `e` (facts, findings and
// the contributed line) from an input already parsed, and throws InvalidArgument (without the
// path, which read_evidence adds) naming what it cannot use. Internal to src/evidence.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "evidence/evidence.h"
#include "reports/result.h"

namespace collie::evidence::detail {

// ncclras -f json: the status document ("communicators") and the -m event stream.
void read_ras_status(const nlohmann::json& j, Evidence& e);
void read_ras_events(const std::vector<nlohmann::json>& events, Evidence& e);

// A perf run, whoever wrote it (nccl-tests JSON or text, collie perf -J): facts per op and rank,
// STRAGGLER from arrival statistics or per-process times, WRONG_DATA from #wrong.
void read_run(const reports::RunResult& r, Evidence& e);

// collie accept -J (collie.accept.v1) and collie probe -J ("probe": pairwise, stragglers,
// connectivity).
void read_accept(const nlohmann::json& j, Evidence& e);
void read_probe(const nlohmann::json& j, Evidence& e);

// "rank 3 (node2)", or "rank 3" when the host is unknown.
std::string rank_label(int rank, const std::vector<std::string>& hosts);

}  // namespace collie::evidence::detail
