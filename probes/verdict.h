#pragma once
// Verdicts for acceptance: OK / WARN / INCONCLUSIVE / CRIT with their exit codes, the rules one
// link measurement is judged by (absolute per-node-type floors and ceilings, a share of what its
// hosts can do, the noise-aware relative rule against the survey's reference, and a direction
// against its reverse), the reference and noise estimated from a survey, and the fault codes
// with their reason and next step. Pure functions on values; thread-safe. See
// docs/acceptance.md.
#include <string>
#include <vector>

#include "core/exit_codes.h"

namespace collie::probes {

// Ordered by how bad: INCONCLUSIVE (the evidence could not decide) is worse than WARN (decided,
// acceptable) and better than CRIT (decided, not acceptable).
enum class Verdict { Ok = 0, Warn = 1, Inconclusive = 2, Crit = 3 };

const char* verdict_name(Verdict v);  // "OK", "WARN", "INCONCLUSIVE", "CRIT"
Verdict worse(Verdict a, Verdict b);

// Exit status for a verdict (core/exit_codes.h). collie keeps 2 for bad flags/input (as every
// command), so GCM's 0/1/2 map to: OK -> 0, CRIT -> 1 (the "found a problem" status every
// collie check uses), WARN -> kExitWarn (5), INCONCLUSIVE -> kExitInconclusive (6). 3 and 4 stay
// the timeout and runtime errors.
int verdict_exit_code(Verdict v);

// What one host can do, measured once per run by its measuring rank (probes/host_capacity.h).
struct HostCapacity {
  double loopback_gbps = 0;  // TCP over 127.0.0.1 in one process, same message size; 0 = unknown
  double line_gbps = 0;  // the data interface's stated speed (/sys/class/net/IF/speed); 0 = unknown
  std::string iface;     // that interface ("" = unknown)
};

// One measurement of a link between two units (hosts; ranks when every rank is on one host).
// Each direction is measured by its sender, one sample per timed message. A link is as good as
// its slower direction: a host with a slow ingress or egress makes every one of its links bad.
struct LinkSample {
  int a = -1, b = -1;         // units, a < b
  std::vector<double> ab;     // a -> b, GB/s per timed message
  std::vector<double> ba;     // b -> a
  double lat_us = -1;         // one-way latency, < 0 = not measured
  double seconds = 0;         // how long the measurement took (round time estimates)
  std::string error;          // "" = measured
  HostCapacity cap_a, cap_b;  // what the two units' hosts can do (zeros = unknown)
  // The larger share of the bandwidth phase's wall time that either end's process spent waiting
  // for a CPU (threads summed; 0 = none or unknown). judge() widens the reference's noise by it,
  // and a measurement that broke the capacity rule by no more than it explains is CPU-starved:
  // it decides nothing (Judgement::starved).
  double cpu_wait = 0;
  bool ok() const { return error.empty() && (!ab.empty() || !ba.empty()); }
  bool slow_is_ab() const;  // the a -> b direction is the slower one (or the only one)
  // The slower direction's samples (the only direction's when one was measured).
  const std::vector<double>& slow_samples() const { return slow_is_ab() ? ab : ba; }
  double value() const;   // median of slow_samples(); 0 when not ok
  double spread() const;  // robust sigma of slow_samples() (1.4826 * MAD); 0 with < 3 values
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
  // A link whose slower direction is below this share of what its hosts can do is bad whatever
  // the reference says (0 = off); its drop against what they can do is at least 1 - share, so
  // with the default crit_drop it is CRIT. What a host can do: the lower of its loopback and its
  // interface's stated speed; with no stated speed, its loopback alone with a tenth of the share
  // (loopback says what the host's TCP stack can carry, not what its network can).
  double capacity_fraction = 0.1;
  // A link whose slower direction is below this share of its reverse is bad (0 = off). Not
  // warn_drop: on a host whose cores are busy, a healthy link's two directions can differ 2-4x
  // for seconds (which rank shares a core with the load decides it), the same in every
  // re-measurement; a tenth is beyond that and far above a real one-way fault (a policer, a
  // duplex mismatch: 100x and more).
  double reverse_fraction = 0.1;
  // A CPU-starved measurement below this share of the reference (what its peers did under the
  // same load) is also `behind` (Judgement): a reason to re-measure its units, never to name
  // them, since at heavy load healthy links fall that far too (verdict's comment below).
  double starved_reference_fraction = 1.0 / 3;
  std::vector<std::string> names;  // per unit, for the reasons ("unit N" where missing)
  double floor(int a, int b) const;
  double ceiling(int a, int b) const;
  std::string name(int unit) const;
};

// The rate below which a link of hosts `a` and `b` breaks the capacity rule, 0 when either host's
// capacity is unknown or the rule is off; `basis` and `can` (may be null) get what the host that
// sets the limit can do, in words and in GB/s.
double capacity_limit(const HostCapacity& a, const HostCapacity& b, double fraction,
                      std::string* basis = nullptr, double* can = nullptr);

// The reference a measurement is compared with: the median over units of each unit's median
// survey link (a bad unit does not move it, even when it touches many links), and the noise,
// the spread expected between repeated measurements of one link: the larger of the typical
// relative standard error of a measurement (its samples' robust sigma * 1.2533 / sqrt(n) over
// its value, times the reference) and, with >= 8 units, the robust spread (1.4826 * MAD) of the
// units' medians. judge() widens it for a measurement whose ranks waited for a CPU
// (LinkSample::cpu_wait): with a handful of hosts nothing else in a run shows that a busy core
// slowed one link through every re-measurement.
struct Reference {
  double gbps = 0;
  double noise_gbps = 0;
  int links = 0;
};
Reference estimate_reference(const std::vector<LinkSample>& survey);

// The rules, in the order judge() applies them (the first one broken decides):
//   Failed     nothing measured
//   Floor      below the spec's absolute floor (node-type profile or min_link_gbps)
//   Ceiling    latency above the spec's absolute ceiling
//   Capacity   below capacity_fraction of what the two hosts can do
//   Reference  warn_drop below the survey's reference and beyond noise_k x its noise (at least
//              cpu_wait x the reference)
//   Reverse    one direction below reverse_fraction of the other, the factor between them
//              beyond noise_k x its relative standard error (log scale; the two directions'
//              own samples)
// The last two need nothing but the measurement itself and the reference: with two or three
// hosts the reference comes from the bad link itself, the reverse direction does not.
// CPU starvation: a measurement that breaks Capacity while its ranks waited for a CPU long enough
// to explain the drop (cpu_wait x noise_k >= the drop below what the hosts can do, the margin
// the Reference rule gives the same wait) is not bad but starved: with every core's queue long,
// what the host did alone at another moment (its loopback) is no yardstick, and neither is what
// its peers did under the same load: on this project's 2-core machine with 12 ranks and 4 busy
// loops, healthy links measured 0.016 to 1.5x the reference their round was judged against
// (609 measurements, 24 % of them below a third of it, at waits of 40-97 %), and a host behind a
// 100 Mbit/s tbf (0.013 GB/s, waits 39-53 %) sat inside that range. So it decides nothing
// either way; one far below its peers (starved_reference_fraction) is `behind`: its units are
// re-measured, and a suspect whose re-measurements are starved ends INCONCLUSIVE ("re-run on
// CPUs that are not oversubscribed"), never named and never cleared by them. The reverse rule
// compares two directions measured in turn under the same load, at a factor (10) beyond what a
// busy core makes of them (2-4x): it is not excused.
enum class Rule { None, Failed, Floor, Ceiling, Capacity, Reference, Reverse };
const char* rule_name(
    Rule r);  // "", "failed", "floor", "ceiling", "capacity", "reference", "reverse"

struct Judgement {
  bool bad = false;
  bool starved = false;   // a rule was broken, but the CPU wait explains it (not bad; why says so)
  bool behind = false;    // starved, and below starved_reference_fraction of the reference
  bool absolute = false;  // Floor or Ceiling broken (always CRIT)
  Rule rule = Rule::None;
  double value_gbps = 0;     // the rate judged (the slower direction's)
  double expected_gbps = 0;  // what it was held against: reference, reverse direction, capacity
  int from = -1, to = -1;    // the slower direction (units) when both directions were measured
  std::string why;           // "" when neither bad nor starved
};
Judgement judge(const LinkSample& s, const Reference& ref, const Thresholds& t);

// Fault codes, each with the reason in words and the next step for the operator. *_INCONCLUSIVE:
// the re-measurements neither confirmed nor cleared a suspect (bad too often for chance to clear
// it, too seldom to name it).
enum class Fault {
  HostSlow,
  HostDown,
  HostFlapping,
  LinkSlow,
  LinkDown,
  LinkFlapping,
  HostInconclusive,
  LinkInconclusive
};
const char* fault_code(Fault f);       // "HOST_SLOW", ...
const char* fault_next_step(Fault f);  // what to do about it
bool fault_is_host(Fault f);

}  // namespace collie::probes
