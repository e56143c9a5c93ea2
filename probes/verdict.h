#pragma once
// Verdicts for acceptance: OK / WARN / CRIT with their exit codes, the thresholds one link
// measurement is judged by (noise-aware relative rule and absolute per-node-type floors and
// ceilings), the reference and noise estimated from a survey, and the fault codes with their
// reason and next step. Pure functions on values; thread-safe. See docs/acceptance.md.
#include <string>
#include <vector>

#include "core/exit_codes.h"

namespace collie::probes {

enum class Verdict { Ok = 0, Warn = 1, Crit = 2 };

const char* verdict_name(Verdict v);  // "OK", "WARN", "CRIT"
Verdict worse(Verdict a, Verdict b);

// Exit status for a verdict (core/exit_codes.h). collie keeps 2 for bad flags/input (as every
// command), so GCM's 0/1/2 map to: OK -> 0, CRIT -> 1 (the "found a problem" status every
// collie check uses), WARN -> kExitWarn (5). 3 and 4 stay the timeout and runtime errors.
int verdict_exit_code(Verdict v);

// One measurement of a link between two units (hosts; ranks when every rank is on one host).
struct LinkSample {
  int a = -1, b = -1;        // units, a < b
  std::vector<double> gbps;  // one bandwidth value per timed message (both directions), GB/s
  double lat_us = -1;        // one-way latency, < 0 = not measured
  double seconds = 0;        // how long the measurement took (round time estimates)
  std::string error;         // "" = measured
  bool ok() const { return error.empty() && !gbps.empty(); }
  double value() const;   // median of gbps; 0 when not ok
  double spread() const;  // robust sigma of gbps (1.4826 * MAD); 0 with < 3 values
};

// What one measurement is judged against. Per-unit absolute limits come from the spec's
// node-type profiles (0 = none); a link's floor is the lower of its two units' floors and its
// latency ceiling the higher of the two ceilings.
struct Thresholds {
  double warn_drop = 0.25;             // relative: bad when this far below the reference ...
  double noise_k = 3;                  // ... and more than noise_k * noise below it
  double crit_drop = 0.5;              // a confirmed drop this large is CRIT (smaller ones WARN)
  std::vector<double> floor_gbps;      // per unit
  std::vector<double> max_latency_us;  // per unit
  double floor(int a, int b) const;
  double ceiling(int a, int b) const;
};

// The reference a measurement is compared with: the median over units of each unit's median
// survey link (a bad unit does not move it, even when it touches many links), and the noise,
// the spread expected between repeated measurements of one link: the larger of the typical
// relative standard error of a measurement (its samples' robust sigma * 1.2533 / sqrt(n) over
// its value, times the reference) and, with >= 8 units, the robust spread (1.4826 * MAD) of the
// units' medians.
struct Reference {
  double gbps = 0;
  double noise_gbps = 0;
  int links = 0;
};
Reference estimate_reference(const std::vector<LinkSample>& survey);

struct Judgement {
  bool bad = false;
  bool absolute = false;  // an absolute floor / ceiling is broken (always CRIT)
  std::string why;        // "" when not bad
};
Judgement judge(const LinkSample& s, const Reference& ref, const Thresholds& t);

// Fault codes, each with the reason in words and the next step for the operator.
enum class Fault { HostSlow, HostDown, HostFlapping, LinkSlow, LinkDown, LinkFlapping };
const char* fault_code(Fault f);       // "HOST_SLOW", ...
const char* fault_next_step(Fault f);  // what to do about it
bool fault_is_host(Fault f);

}  // namespace collie::probes
