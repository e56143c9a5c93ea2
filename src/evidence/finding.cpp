#include "evidence/finding.h"

#include <fmt/format.h>

#include "core/printable.h"

namespace collie::evidence {

const char* finding_type_name(FindingType t) {
  switch (t) {
    case FindingType::Straggler:
      return "STRAGGLER";
    case FindingType::SlowLink:
      return "SLOW_LINK";
    case FindingType::SlowHost:
      return "SLOW_HOST";
    case FindingType::WrongData:
      return "WRONG_DATA";
    case FindingType::RankDead:
      return "RANK_DEAD";
    case FindingType::Unreachable:
      return "UNREACHABLE";
    case FindingType::NotJoined:
      return "NOT_JOINED";
  }
  return "?";
}

std::string finding_text(const Finding& f) {
  // Names and lines come from the inputs: printable() keeps each one line.
  std::string out = fmt::format("{} {} [confidence {:.1f}] from {}\n", finding_type_name(f.type),
                                printable(f.who), f.confidence, printable(f.source));
  for (const auto& e : f.evidence) out += "  " + printable(e) + "\n";
  if (!f.next_step.empty()) out += "  next step: " + printable(f.next_step) + "\n";
  return out;
}

}  // namespace collie::evidence
