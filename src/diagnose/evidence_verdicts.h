#pragma once
// Verdicts from the evidence readers (src/evidence: ncclras, nccl-tests and collie perf results,
// collie accept and probe reports), joined with the verdicts of the flight-recorder dumps into
// one Diagnosis (issue 41: `collie analyze PATH...` takes any mix).
//
// Each finding becomes a verdict of the same kind, with its input as the source. Then verdicts
// from different inputs are joined by host (host names as each input writes them; RAS gives
// addresses, which join nothing but each other):
//   - the same kind about a common host is one verdict: ranks and hosts united, every input's
//     evidence kept, confidence 1 - (1 - a)(1 - b) (at most 0.99), its sources listed;
//   - different kinds about a common host each get one evidence line naming the other ("also
//     SLOW_HOST of node2 in accept.json"): a straggler and a slow link on its host, or a rank
//     stuck in a collective on a host whose links the acceptance found slow.
// Ranks are not joined across inputs: a perf or acceptance run numbers its own ranks, which are
// not the hung job's. Times are not joined (the inputs' clocks and granularity differ).
// Thread safety: pure functions over values.
#include <vector>

#include "diagnose/verdict.h"
#include "evidence/evidence.h"

namespace collie {

// Adds the findings of `inputs` to `d` as verdicts, one source line per input
// ("PATH: FORMAT: what it contributed"), joins them as above and orders `d`.
void add_evidence(Diagnosis& d, const std::vector<evidence::Evidence>& inputs);

// The join alone (add_evidence calls it): verdicts with different sources and a common host.
void join_by_host(Diagnosis& d);

}  // namespace collie
