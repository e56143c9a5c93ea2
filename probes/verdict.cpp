#include "probes/verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "probes/link_matrix.h"

namespace collie::probes {
namespace {

double robust_sigma(const std::vector<double>& v) {
  if (v.size() < 3) return 0;
  const double med = median(v);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - med));
  return 1.4826 * median(dev);
}

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Ok:
      return "OK";
    case Verdict::Warn:
      return "WARN";
    case Verdict::Inconclusive:
      return "INCONCLUSIVE";
    case Verdict::Crit:
      return "CRIT";
  }
  return "?";
}

Verdict worse(Verdict a, Verdict b) { return static_cast<int>(a) >= static_cast<int>(b) ? a : b; }

int verdict_exit_code(Verdict v) {
  switch (v) {
    case Verdict::Ok:
      return 0;
    case Verdict::Warn:
      return kExitWarn;
    case Verdict::Inconclusive:
      return kExitInconclusive;
    case Verdict::Crit:
      return 1;
  }
  return 1;
}

bool LinkSample::slow_is_ab() const {
  if (ab.empty() || ba.empty()) return !ab.empty();
  return median(ab) <= median(ba);
}

double LinkSample::value() const { return ok() ? median(slow_samples()) : 0; }

double LinkSample::spread() const { return ok() ? robust_sigma(slow_samples()) : 0; }

double Thresholds::floor(int a, int b) const {
  auto at = [&](int u) {
    return u >= 0 && u < static_cast<int>(floor_gbps.size()) ? floor_gbps[u] : 0.0;
  };
  const double fa = at(a), fb = at(b);
  if (fa <= 0) return fb;
  if (fb <= 0) return fa;
  return std::min(fa, fb);
}

double Thresholds::ceiling(int a, int b) const {
  auto at = [&](int u) {
    return u >= 0 && u < static_cast<int>(max_latency_us.size()) ? max_latency_us[u] : 0.0;
  };
  return std::max(at(a), at(b));
}

const char* rule_name(Rule r) {
  switch (r) {
    case Rule::None:
      return "";
    case Rule::Failed:
      return "failed";
    case Rule::Floor:
      return "floor";
    case Rule::Ceiling:
      return "ceiling";
    case Rule::Capacity:
      return "capacity";
    case Rule::Reference:
      return "reference";
    case Rule::Reverse:
      return "reverse";
  }
  return "";
}

std::string Thresholds::name(int unit) const {
  if (unit >= 0 && unit < static_cast<int>(names.size()) && !names[unit].empty())
    return names[unit];
  return fmt::format("unit {}", unit);
}

namespace {

// What one host can do (*can) and the share of it a link must reach (the result; see
// Thresholds::capacity_fraction); 0 when unknown.
double host_limit(const HostCapacity& c, double fraction, std::string* basis, double* can) {
  if (c.line_gbps > 0) {
    *can = c.loopback_gbps > 0 ? std::min(c.loopback_gbps, c.line_gbps) : c.line_gbps;
    *basis =
        fmt::format("{:.4g} GB/s ({} states {:.0f} Mb/s{})", *can,
                    c.iface.empty() ? "its interface" : c.iface, c.line_gbps * 8e3,
                    c.loopback_gbps > 0 ? fmt::format(", loopback {:.3g} GB/s", c.loopback_gbps)
                                        : std::string());
    return *can * fraction;
  }
  if (c.loopback_gbps <= 0) return 0;
  *can = c.loopback_gbps;
  *basis = fmt::format("loopback {:.3g} GB/s ({}states no speed: a tenth of the share)",
                       c.loopback_gbps, c.iface.empty() ? "" : c.iface + " ");
  return c.loopback_gbps * fraction * 0.1;
}

}  // namespace

double capacity_limit(const HostCapacity& a, const HostCapacity& b, double fraction,
                      std::string* basis, double* can) {
  if (!(fraction > 0)) return 0;
  std::string ba, bb;
  double ca = 0, cb = 0;
  const double la = host_limit(a, fraction, &ba, &ca), lb = host_limit(b, fraction, &bb, &cb);
  if (la <= 0 || lb <= 0) return 0;
  if (basis) *basis = la <= lb ? ba : bb;
  if (can) *can = la <= lb ? ca : cb;
  return std::min(la, lb);
}

Reference estimate_reference(const std::vector<LinkSample>& survey) {
  Reference r;
  std::vector<double> values, spreads;  // spreads relative to their measurement's value
  for (const auto& s : survey) {
    if (!s.ok()) continue;
    values.push_back(s.value());
    // The spread of the measurement's value (the median of its samples) is the samples'
    // spread over sqrt(n) (times 1.2533, the median's efficiency against the mean).
    if (s.value() > 0)
      spreads.push_back(s.spread() * 1.2533 /
                        std::sqrt(static_cast<double>(s.slow_samples().size())) / s.value());
  }
  r.links = static_cast<int>(values.size());
  if (values.empty()) return r;
  // The median unit: each unit's median link first, so one bad unit touching many links of a
  // full survey does not move the reference.
  std::map<int, std::vector<double>> per_unit;
  for (const auto& s : survey) {
    if (!s.ok()) continue;
    per_unit[s.a].push_back(s.value());
    per_unit[s.b].push_back(s.value());
  }
  std::vector<double> units;
  for (const auto& [u, v] : per_unit) units.push_back(median(v));
  r.gbps = median(units);
  // Noise is relative (a busy machine slows a fast link more in GB/s than a slow one): the
  // typical relative spread within a measurement, scaled to the reference; and, with enough
  // units for a faulty one not to matter, the robust spread of the units' medians.
  r.noise_gbps = spreads.empty() ? 0 : median(spreads) * r.gbps;
  if (units.size() >= 8) r.noise_gbps = std::max(r.noise_gbps, robust_sigma(units));
  return r;
}

namespace {

// The standard error of a direction's median (robust sigma * 1.2533 / sqrt(n)).
double median_error(const std::vector<double>& v) {
  return v.empty() ? 0 : robust_sigma(v) * 1.2533 / std::sqrt(static_cast<double>(v.size()));
}

}  // namespace

Judgement judge(const LinkSample& s, const Reference& ref, const Thresholds& t) {
  Judgement j;
  if (!s.ok()) {
    j.bad = true;
    j.rule = Rule::Failed;
    j.why = s.error.empty() ? "no result" : s.error;
    return j;
  }
  const double v = s.value();
  j.value_gbps = v;
  const bool both = !s.ab.empty() && !s.ba.empty();
  const double fast = both ? std::max(median(s.ab), median(s.ba)) : v;
  // "host0 -> host1 0.0048 GB/s (reverse 2.6 GB/s)"; the direction only when both were measured.
  std::string what = fmt::format("{:.4g} GB/s", v);
  if (both) {
    j.from = s.slow_is_ab() ? s.a : s.b;
    j.to = s.slow_is_ab() ? s.b : s.a;
    what = fmt::format("{} -> {} {:.4g} GB/s (reverse {:.4g} GB/s)", t.name(j.from), t.name(j.to),
                       v, fast);
  }
  auto bad = [&](Rule rule, double expected, bool absolute, std::string why) {
    j.bad = true;
    j.rule = rule;
    j.expected_gbps = expected;
    j.absolute = absolute;
    j.why = std::move(why);
    return j;
  };
  // The capacity rule broken by a drop the measurement's own CPU wait explains (verdict.h).
  auto bad_unless_starved = [&](Rule rule, double expected, std::string why) {
    const double drop = expected > 0 ? (expected - v) / expected : 1;
    bad(rule, expected, false, std::move(why));
    if (s.cpu_wait * t.noise_k < drop) return j;
    j.bad = false;
    j.starved = true;
    j.behind = ref.gbps > 0 && v < t.starved_reference_fraction * ref.gbps;
    j.why += fmt::format(
        "; but its ranks waited for a CPU {:.0f}% of the time, which explains that much{}: "
        "CPU-starved, not judged",
        s.cpu_wait * 100,
        j.behind ? fmt::format(", though it is also {:.0f}% below the reference {:.4g} GB/s its "
                               "peers reached under the same load",
                               (ref.gbps - v) / ref.gbps * 100, ref.gbps)
                 : fmt::format(" (reference {:.4g} GB/s)", ref.gbps));
    return j;
  };
  const double floor = t.floor(s.a, s.b), ceiling = t.ceiling(s.a, s.b);
  if (floor > 0 && v < floor)
    return bad(Rule::Floor, floor, true,
               fmt::format("{} below the floor {:.4g} GB/s", what, floor));
  if (ceiling > 0 && s.lat_us > ceiling)
    return bad(Rule::Ceiling, 0, true,
               fmt::format("latency {:.1f} us above the ceiling {:.1f} us", s.lat_us, ceiling));
  std::string basis;
  double can = 0;
  const double limit = capacity_limit(s.cap_a, s.cap_b, t.capacity_fraction, &basis, &can);
  if (limit > 0 && v < limit)
    return bad_unless_starved(
        Rule::Capacity, can,
        fmt::format("{}, {:.0f}% below what its hosts can do, {}; bad below {:.4g} GB/s", what,
                    (can - v) / can * 100, basis, limit));
  if (ref.gbps > 0) {
    // Ranks that queued for a core a share w of the measurement moved their bytes slower for
    // it: that share of the reference is noise of this measurement, not a property of the link.
    const double noise = std::max(ref.noise_gbps, std::min(s.cpu_wait, 1.0) * ref.gbps);
    const double drop = (ref.gbps - v) / ref.gbps;
    if (drop >= t.warn_drop && ref.gbps - v > t.noise_k * noise)
      return bad(Rule::Reference, ref.gbps, false,
                 fmt::format("{}, {:.0f}% below the reference {:.4g} GB/s (noise {:.2g}{})", what,
                             drop * 100, ref.gbps, noise,
                             noise > ref.noise_gbps
                                 ? fmt::format("; its ranks waited for a CPU {:.0f}% of the time",
                                               s.cpu_wait * 100)
                                 : ""));
  }
  if (both && v > 0 && v < t.reverse_fraction * fast) {
    // A ratio, so judged on a log scale: the factor between the directions against the two
    // medians' relative standard errors (an absolute spread of the fast direction would hide
    // a 400x gap whenever its samples scatter 2x).
    const double noise =
        std::hypot(median_error(s.ab) / median(s.ab), median_error(s.ba) / median(s.ba));
    const double drop = (fast - v) / fast;
    if (std::log(fast / v) > t.noise_k * noise)
      return bad(Rule::Reverse, fast, false,
                 fmt::format("{} -> {} {:.4g} GB/s, {:.0f}% below the reverse direction {:.4g} "
                             "GB/s ({:.0f}x; relative noise {:.2g})",
                             t.name(j.from), t.name(j.to), v, drop * 100, fast, fast / v, noise));
  }

  return j;
}

const char* fault_code(Fault f) {
  switch (f) {
    case Fault::HostSlow:
      return "HOST_SLOW";
    case Fault::HostDown:
      return "HOST_DOWN";
    case Fault::HostFlapping:
      return "HOST_FLAPPING";
    case Fault::LinkSlow:
      return "LINK_SLOW";
    case Fault::LinkDown:
      return "LINK_DOWN";
    case Fault::LinkFlapping:
      return "LINK_FLAPPING";
    case Fault::HostInconclusive:
      return "HOST_INCONCLUSIVE";
    case Fault::LinkInconclusive:
      return "LINK_INCONCLUSIVE";
  }
  return "?";
}

const char* fault_next_step(Fault f) {
  switch (f) {
    case Fault::HostSlow:
      return "drain the host; check its NIC speed and error counters (ethtool -S, ibstat), PCIe "
             "width, CPU frequency and competing load, then re-run the probe";
    case Fault::HostDown:
      return "drain the host; check that its data-network interface is up and routable "
             "(collie probe connectivity names the broken pairs)";
    case Fault::HostFlapping:
      return "drain the host; look for a flapping port or cable (link up/down in dmesg, switch "
             "port counters) or bursts of competing load";
    case Fault::LinkSlow:
      return "both hosts are fine with other partners: check the path between them (cables, "
             "switch port errors, routing/ECMP, MTU)";
    case Fault::LinkDown:
      return "both hosts reach other partners: check routing and firewalls between these two "
             "hosts and the switch ports on their path";
    case Fault::LinkFlapping:
      return "intermittent on this path only: check the cable/transceiver and the switch port "
             "counters on it; reseat or replace, then re-run";
    case Fault::HostInconclusive:
    case Fault::LinkInconclusive:
      return "re-run the probe (a quieter moment, or --confirm 4 for more re-measurements); if it "
             "stays inconclusive, measure against other known-good hosts (--schedule full)";
  }
  return "";
}

bool fault_is_host(Fault f) {
  return f == Fault::HostSlow || f == Fault::HostDown || f == Fault::HostFlapping ||
         f == Fault::HostInconclusive;
}

}  // namespace collie::probes
