#pragma once
// One typed finding from the evidence an operator holds after an incident (NCCL RAS output,
// nccl-tests and collie results, acceptance reports): who is behind or broken, how sure the
// evidence makes it, the lines of the input that say so, and what to do next. Self-contained
// (std types only) so `collie analyze` can adopt it as it is. Plain values; copyable.
#include <string>
#include <vector>

namespace collie::evidence {

enum class FindingType {
  Straggler,    // a rank or host that arrives last / is slowest in most measurements
  SlowLink,     // a link measured far below its peers or what its hosts can do
  SlowHost,     // a host every one of whose links is slow
  WrongData,    // a collective's output had wrong elements
  RankDead,     // the rank's process is gone (NCCL RAS: unreachable past its 60 s)
  Unreachable,  // the rank or host could not be reached when asked
  NotJoined,    // the rank is alive but launched fewer collectives than the others
};

// "STRAGGLER", "SLOW_LINK", "SLOW_HOST", "WRONG_DATA", "RANK_DEAD", "UNREACHABLE", "NOT_JOINED".
const char* finding_type_name(FindingType t);

// How sure a finding is: the input states it directly (a dead process, the rank validation saw
// a wrong element on, a confirmed acceptance fault) is kStated; a measurement beyond a noise rule
// is kMeasured; an indirect reading (a slower per-process time, a one-collective lag that may be
// in flight) is kIndirect.
inline constexpr double kStated = 0.9, kMeasured = 0.7, kIndirect = 0.5;

struct Finding {
  FindingType type = FindingType::Straggler;
  std::string who;                    // "rank 3 (node2)", "host node2", "link node1 <-> node2"
  std::vector<int> ranks;             // the ranks concerned (empty when the input has none)
  std::vector<std::string> hosts;     // the hosts concerned
  double confidence = kIndirect;      // in (0, 1]
  std::vector<std::string> evidence;  // what the input says, one line each
  std::string next_step;
  std::string source;  // the input it came from (path)
};

// "STRAGGLER rank 3 (node2) [confidence 0.7] from PATH" then the evidence lines and the next
// step, each indented and made printable (core/printable.h); ends in '\n'.
std::string finding_text(const Finding& f);

}  // namespace collie::evidence
