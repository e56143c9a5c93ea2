#pragma once
// Isolation schedule for pairwise acceptance at scale: which pairs of units (hosts; ranks when
// every rank is on one host) to measure, round after round, and which faults to name. Pure: the
// measurements come from a callback (real ranks in probes/pairwise.cpp, a simulated cluster in
// the tests), so the same code decides in both. Thread safety: isolate() keeps its state on
// the stack; call it from one thread (the callback runs on that thread).
//
// Schedule (docs/acceptance.md):
//  1. survey: "quick" = one round of disjoint pairs (tournament round `rotation`, so successive
//     runs pair differently; a cluster under 16 units takes the next rounds too until >= 8
//     pairs are measured), or "full" = every pair (the whole round-robin tournament).
//  2. reference and noise from the survey (verdict.h); a pair is bad when judge() says so.
//     Suspect units: at least half of their survey pairs bad (quick: the one pair), plus units
//     the survey left out (a bye); a unit whose every bad pair is with a unit that has a larger
//     share of bad pairs is explained by it and stays known-good (3 hosts, one slow: its two
//     partners are each bad in one of two pairs, both with it).
//  3. re-pairing: every suspect meets at least `confirm` different known-good partners (units
//     with no bad survey pair), all suspects in the same rounds. Bad every time and beyond
//     chance (IsolateOptions::alpha): named; never, or in under a third of the meetings:
//     cleared; otherwise more meetings (up to confirm + max_extra), then named flapping when
//     the bad ones are beyond chance; when they are not, cleared, unless most re-measurements
//     were bad (or fewer than `confirm` could be made): *_INCONCLUSIVE, neither confirmed nor
//     cleared. A CPU-starved measurement (verdict.h) decides nothing: a starved survey pair
//     makes no suspect unless it is `behind` its peers, and a suspect whose re-measurements were
//     starved, with fewer than `confirm` of them judged, is *_INCONCLUSIVE with that reason
//     (up to 2 x confirm re-measurements are tried for `confirm` judged ones).
//  4. links: bad survey pairs whose units were both cleared are re-measured themselves, with
//     the same rule. With no known-good unit at all (2 hosts; every unit suspect) the bad pairs
//     are re-measured as links and a named one says that which of its hosts is at fault cannot
//     be separated.
// Every re-measurement round also measures control pairs of known-good units (idle ones in the
// same round, else a control round right after); when they are slower than the survey's
// reference, the round is judged against them, so a slowdown of the whole cluster (a load
// burst) is not blamed on the suspects being measured at that moment.
// So one bad unit among N costs 1 + confirm + confirm rounds whatever N is, versus N - 1 for
// the full tournament; a bad link is only seen if the survey measured it (use "full" for every
// link, or rotate the quick pass across runs).
#include <functional>
#include <string>
#include <vector>

#include "probes/verdict.h"

namespace collie::probes {

struct UnitPair {
  int a = -1, b = -1;  // a < b
};

// Measures every pair of one round at the same time (no unit is in two pairs) and returns one
// sample per pair (a pair with no sample counts as failed: "no result").
using MeasureRound = std::function<std::vector<LinkSample>(const std::vector<UnitPair>&)>;

struct IsolateOptions {
  std::string schedule = "quick";  // quick | full
  int rotation = 0;                // quick: the tournament round used as the survey
  int confirm = 2;                 // re-measurements that must reproduce before naming (>= 1)
  int max_extra = 6;               // extra re-measurements for mixed or not yet significant ones
  // Naming is a test against chance: a healthy unit or link is assumed bad in at most a
  // fraction `chance` of its measurements (the survey's own bad fraction when it is larger and
  // the survey has >= 32 pairs), and a result is named only when the binomial probability of
  // that many bad re-measurements by chance, times the number of suspects in the phase
  // (Bonferroni), is below `alpha`.
  double chance = 0.02;
  double alpha = 0.001;
  Thresholds thresholds;
};

// One measurement in the evidence of a finding.
struct Observation {
  int round = 0;
  int partner = -1;  // the other unit of the measured pair
  double gbps = 0;   // LinkSample::value()
  double lat_us = -1;
  double ref_gbps = 0;  // the reference it was judged against (the round's controls when slower)
  bool bad = false;
  bool starved = false;      // it broke a rule, but its CPU wait explains it (judge()): undecided
  bool behind = false;       // starved and far below its peers (Judgement::behind): a suspicion
  double cpu_wait = 0;       // LinkSample::cpu_wait
  Rule rule = Rule::None;    // the rule it broke (judge())
  double expected_gbps = 0;  // what that rule held it against
  int from = -1, to = -1;    // its slower direction (units), when both were measured
  std::string why;           // judge()'s reason or the error ("" when fine)
};

struct IsolationFinding {
  Fault fault = Fault::HostSlow;
  Verdict severity = Verdict::Warn;
  int a = -1, b = -1;      // the unit (b = -1) or the link
  double value_gbps = 0;   // median of the bad re-measurements (0 when they all failed)
  double effect = 0;       // (reference - value) / reference, 1 = nothing got through
  double noise_gbps = 0;   // the reference noise it was judged against
  int confirmations = 0;   // bad re-measurements
  int remeasured = 0;      // re-measurements judged (CPU-starved ones decide nothing)
  bool absolute = false;   // an absolute floor / ceiling was broken
  Rule rule = Rule::None;  // the rule the first bad measurement with a rate broke
  int from = -1, to = -1;  // the slow direction, when every bad measurement agreed on one
  bool separated = true;   // a link whose hosts were checked against known-good partners
  std::string reason;      // in words, with the numbers
  std::string next_step;   // what to do (fault_next_step, or why a link cannot be separated)
  std::vector<Observation> evidence;  // survey first, then every re-measurement
};

struct IsolationReport {
  int units = 0;
  std::string schedule;
  int rounds = 0;  // rounds measured (survey included)
  int survey_rounds = 0;
  int pairs_measured = 0;
  double seconds = 0;  // sum over rounds of the slowest pair's LinkSample::seconds
  Reference reference;
  int suspects = 0;       // units re-paired
  int suspect_links = 0;  // links re-measured
  int cleared = 0;        // suspects (units and links) that did not reproduce
  int inconclusive = 0;   // suspects neither confirmed nor cleared
  // Survey pairs measured, and those CPU-starved (judge()): when more than half were, the survey
  // decided too little to clear anything, and the report is at least INCONCLUSIVE.
  int survey_measured = 0;
  int survey_starved = 0;
  double survey_wait = 0;  // the most CPU wait among the starved ones
  bool survey_mostly_starved() const {
    return survey_measured > 0 && survey_starved * 2 > survey_measured;
  }
  // "6 of 9 survey pairs CPU-starved (their ranks waited for a CPU up to 81% of the time)".
  std::string survey_starved_text() const;
  std::vector<std::string> phases;  // one line per phase, for the report
  std::vector<IsolationFinding> findings;
  // The worst finding severity (INCONCLUSIVE for *_INCONCLUSIVE), at least INCONCLUSIVE when the
  // survey was mostly CPU-starved; OK when neither.
  Verdict verdict() const;
};

// Runs the schedule over `units` units (REQUIRES: units >= 0, o.confirm >= 1). `survey`, when
// not empty, replaces the engine's own survey (a driver that measured every rank pair itself);
// `survey_rounds` is then the rounds it took.
IsolationReport isolate(int units, const IsolateOptions& o, const MeasureRound& measure,
                        const std::vector<LinkSample>& survey = {}, int survey_rounds = 0);

// The tournament round a quick survey of `units` units uses (rotation taken modulo the rounds).
std::vector<UnitPair> survey_round(int units, int rotation);

}  // namespace collie::probes
