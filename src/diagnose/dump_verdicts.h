#pragma once
// Verdicts from flight-recorder dumps (or live ranks' recorders): the analyzer's findings and
// facts (debug/analyzer.h) read as causes. A rank outside collectives that others wait for is
// NOT_JOINED; groups whose missing ranks are blocked in each other are one DEADLOCK with its
// cycle; a collective every member entered that does not complete is STUCK_IN_COLLECTIVE;
// differing calls are a MISMATCH; a rank without a dump is RANK_DEAD (UNREACHABLE live, unless
// nothing listens at its address); a rank that arrives last at most collectives of a job that
// does not hang is a STRAGGLER. Ranks waiting because of one of these are evidence, not verdicts.
// Thread safety: pure functions.
#include <string>

#include "debug/analyzer.h"
#include "diagnose/verdict.h"

namespace collie {

// A STRAGGLER arrives last at this share of the collectives it was in, at least kStragglerMinOps
// of them, by a median of at least kStragglerMinMs after the rank before it. Ranks of a healthy
// job take turns being last, by far less.
inline constexpr double kStragglerShare = 0.75;
inline constexpr size_t kStragglerMinOps = 8;
inline constexpr double kStragglerMinMs = 20;

// `source` names the evidence in each verdict ("flight-recorder dumps", "live ranks").
Diagnosis diagnose(const Analysis& a, const std::string& source);

}  // namespace collie
