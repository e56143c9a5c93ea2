#include "probes/verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "probes/stats.h"

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
    case Verdict::Crit:
      return 1;
  }
  return 1;
}

double LinkSample::value() const { return ok() ? median(gbps) : 0; }

double LinkSample::spread() const { return ok() ? robust_sigma(gbps) : 0; }

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

Reference estimate_reference(const std::vector<LinkSample>& survey) {
  Reference r;
  std::vector<double> values, spreads;  // spreads relative to their measurement's value
  for (const auto& s : survey) {
    if (!s.ok()) continue;
    values.push_back(s.value());
    // The spread of the measurement's value (the median of its samples) is the samples'
    // spread over sqrt(n) (times 1.2533, the median's efficiency against the mean).
    if (s.value() > 0)
      spreads.push_back(s.spread() * 1.2533 / std::sqrt(static_cast<double>(s.gbps.size())) /
                        s.value());
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

Judgement judge(const LinkSample& s, const Reference& ref, const Thresholds& t) {
  Judgement j;
  if (!s.ok()) {
    j.bad = true;
    j.why = s.error.empty() ? "no result" : s.error;
    return j;
  }
  const double v = s.value();
  const double floor = t.floor(s.a, s.b), ceiling = t.ceiling(s.a, s.b);
  if (floor > 0 && v < floor) {
    j.bad = j.absolute = true;
    j.why = fmt::format("{:.4g} GB/s below the floor {:.4g} GB/s", v, floor);
    return j;
  }
  if (ceiling > 0 && s.lat_us > ceiling) {
    j.bad = j.absolute = true;
    j.why = fmt::format("latency {:.1f} us above the ceiling {:.1f} us", s.lat_us, ceiling);
    return j;
  }
  if (ref.gbps <= 0) return j;
  const double drop = (ref.gbps - v) / ref.gbps;
  if (drop >= t.warn_drop && ref.gbps - v > t.noise_k * ref.noise_gbps) {
    j.bad = true;
    j.why = fmt::format("{:.4g} GB/s, {:.0f}% below the reference {:.4g} GB/s (noise {:.2g})", v,
                        drop * 100, ref.gbps, ref.noise_gbps);
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
  }
  return "";
}

bool fault_is_host(Fault f) {
  return f == Fault::HostSlow || f == Fault::HostDown || f == Fault::HostFlapping;
}

}  // namespace collie::probes
