#include "diagnose/verdict.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/printable.h"
#include "debug/rank_ranges.h"

namespace collie {

const char* verdict_name(VerdictKind k) {
  switch (k) {
    case VerdictKind::Deadlock:
      return "DEADLOCK";
    case VerdictKind::Mismatch:
      return "MISMATCH";
    case VerdictKind::RankDead:
      return "RANK_DEAD";
    case VerdictKind::Unreachable:
      return "UNREACHABLE";
    case VerdictKind::NotJoined:
      return "NOT_JOINED";
    case VerdictKind::StuckInCollective:
      return "STUCK_IN_COLLECTIVE";
    case VerdictKind::WrongData:
      return "WRONG_DATA";
    case VerdictKind::SlowLink:
      return "SLOW_LINK";
    case VerdictKind::SlowHost:
      return "SLOW_HOST";
    case VerdictKind::Straggler:
      return "STRAGGLER";
  }
  return "?";
}

void Diagnosis::order() {
  std::stable_sort(verdicts.begin(), verdicts.end(), [](const Verdict& a, const Verdict& b) {
    if (a.kind != b.kind) return static_cast<int>(a.kind) < static_cast<int>(b.kind);
    return a.confidence > b.confidence;
  });
}

std::string to_text(const Diagnosis& d) {
  if (d.verdicts.empty()) return "";
  std::string out = "Verdicts:\n";
  int n = 0;
  for (const Verdict& v : d.verdicts) {
    out +=
        fmt::format("{}. {} (confidence {:.2f}){}: {}\n", ++n, verdict_name(v.kind), v.confidence,
                    v.group.empty() ? "" : fmt::format(", group {}", v.group), v.summary);
    for (const std::string& e : v.evidence) out += fmt::format("   evidence: {}\n", e);
    if (!v.next_step.empty()) out += fmt::format("   next: {}\n", v.next_step);
  }
  if (!d.first_hung_group.empty()) {
    out += fmt::format("First hung group: {} ({})\n", d.first_hung_group, d.first_hung_why);
  }
  return printable_lines(out);
}

nlohmann::json to_json_value(const Diagnosis& d) {
  nlohmann::json vs = nlohmann::json::array();
  for (const Verdict& v : d.verdicts) {
    vs.push_back({{"kind", verdict_name(v.kind)},
                  {"ranks", rank_ranges(v.ranks)},
                  {"rank_count", v.ranks.size()},
                  {"hosts", v.hosts},
                  {"group", v.group},
                  {"confidence", v.confidence},
                  {"summary", v.summary},
                  {"evidence", v.evidence},
                  {"next_step", v.next_step},
                  {"facts", v.facts},
                  {"source", v.source}});
  }
  return {{"verdicts", std::move(vs)},
          {"first_hung_group", d.first_hung_group},
          {"first_hung_why", d.first_hung_why},
          {"sources", d.sources}};
}

}  // namespace collie
