#pragma once
// A simulated cluster for the isolation schedule (probes/isolate.h): hosts with a NIC speed,
// injected slow hosts, slow links, one-way slow hosts (ingress or egress only), flapping links,
// high-latency hosts and measurement noise (per-message jitter plus transient slowdowns of whole
// measurements, the "busy machine"), and optionally what each host can do (loopback, line rate).
// measure() answers one round the way the real ranks would. Deterministic for a seed.
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "probes/isolate.h"

namespace collie::probes::sim {

struct SimCluster {
  int hosts = 0;
  double nic_gbps = 10;            // healthy link speed
  double static_spread = 0.03;     // fixed per-link variation (cabling, placement)
  double jitter = 0.05;            // per-message relative noise (sigma)
  double transient_rate = 0.01;    // chance a whole measurement runs slowed ...
  double transient_factor = 0.55;  // ... at this fraction of its speed
  int messages = 10;               // timed messages per measurement (half each way)
  int64_t bytes = 4 << 20;
  double setup_s = 0.05;             // connect + latency ping-pong
  double timeout_s = 5;              // a failed measurement costs the step deadline
  std::map<int, double> slow_hosts;  // host -> speed factor
  int slow_until = 0;  // > 0: slow_hosts apply only in rounds <= slow_until (a passing fault)
  std::set<int> slow_off_rounds;                     // rounds in which slow_hosts do not apply
  std::map<std::pair<int, int>, double> slow_links;  // (a < b) -> speed factor
  std::set<std::pair<int, int>> flapping;            // down in every other round, from round 1
  // Down in every other measurement *of the link* (its 1st, 3rd, ...), whichever rounds those
  // are: the netns test's flapping link (tests/probes/isolate_netns_test.sh flapping_link).
  std::set<std::pair<int, int>> flapping_per_use;
  std::map<std::pair<int, int>, int> uses;  // measurements of each flapping_per_use link
  std::map<int, double> latency_us;         // host -> one-way latency (default 5)
  std::map<int, double> slow_ingress;       // host -> speed factor of traffic toward it
  std::map<int, double> slow_egress;        // host -> speed factor of traffic from it
  // Per-direction persistent slowdown of a measurement (a busy core, as on a loaded machine):
  // with this chance one direction of a measurement runs at direction_factor.
  double direction_rate = 0;
  double direction_factor = 0.3;
  // What every host can do (0 = unknown, the capacity rule then has nothing to judge by).
  double loopback_gbps = 0, line_gbps = 0;
  std::map<int, double> host_loopback;  // per-host override
  // The CPU wait the ranks of a host report for each of its measurements (LinkSample::cpu_wait;
  // a measurement takes the larger of its two hosts'): ranks queued for an oversubscribed core.
  std::map<int, double> cpu_wait;
  std::map<int, double> round_cpu_wait;  // round -> the wait of every measurement in it (at least)
  std::set<int> burst_rounds;  // rounds in which every link runs at burst_factor (a load burst)
  double burst_factor = 0.3;
  int rounds = 0;
  std::mt19937_64 rng{1};

  double static_factor(int a, int b) const {
    // A fixed, hash-like value in [1 - spread, 1 + spread] per link.
    const uint64_t h = (static_cast<uint64_t>(a) * 1000003u + b) * 0x9E3779B97F4A7C15ull;
    return 1 + static_spread * ((static_cast<double>(h >> 11) / 9007199254740992.0) * 2 - 1);
  }

  LinkSample one(int a, int b) {
    LinkSample s;
    s.a = a;
    s.b = b;
    if (flapping.count({a, b}) && rounds % 2 == 1) {
      s.error = "recv from peer: connection reset (simulated flap)";
      s.seconds = timeout_s;
      return s;
    }
    if (flapping_per_use.count({a, b}) && ++uses[{a, b}] % 2 == 1) {
      s.error = "connecting: timed out (simulated flap)";
      s.seconds = timeout_s;
      return s;
    }
    double speed = nic_gbps * static_factor(a, b);
    if ((slow_until == 0 || rounds <= slow_until) && !slow_off_rounds.count(rounds)) {
      if (slow_hosts.count(a)) speed *= slow_hosts.at(a);
      if (slow_hosts.count(b)) speed *= slow_hosts.at(b);
    }
    if (slow_links.count({a, b})) speed *= slow_links.at({a, b});
    if (burst_rounds.count(rounds)) speed *= burst_factor;
    std::uniform_real_distribution<double> u(0, 1);
    if (u(rng) < transient_rate) speed *= transient_factor;
    std::normal_distribution<double> n(1, jitter);
    auto way = [&](int from, int to) {
      double v = speed;
      if (slow_egress.count(from)) v *= slow_egress.at(from);
      if (slow_ingress.count(to)) v *= slow_ingress.at(to);
      if (u(rng) < direction_rate) v *= direction_factor;
      return v;
    };
    const double ab = way(a, b), ba = way(b, a);
    for (int i = 0; i < messages / 2; ++i) {
      s.ab.push_back(ab * std::max(0.2, n(rng)));
      s.ba.push_back(ba * std::max(0.2, n(rng)));
    }
    speed = std::min(ab, ba);
    for (int h : {a, b}) {
      HostCapacity& c = h == a ? s.cap_a : s.cap_b;
      c.loopback_gbps = host_loopback.count(h) ? host_loopback.at(h) : loopback_gbps;
      c.line_gbps = line_gbps;
      c.iface = line_gbps > 0 ? "eth0" : "";
    }
    for (int h : {a, b})
      if (cpu_wait.count(h)) s.cpu_wait = std::max(s.cpu_wait, cpu_wait.at(h));
    if (round_cpu_wait.count(rounds)) s.cpu_wait = std::max(s.cpu_wait, round_cpu_wait.at(rounds));
    auto lat = [&](int h) { return latency_us.count(h) ? latency_us.at(h) : 5.0; };
    s.lat_us = std::max(lat(a), lat(b)) * std::max(0.5, n(rng));
    s.seconds = setup_s + static_cast<double>(bytes) * messages / 2 / (speed * 1e9) +
                static_cast<double>(bytes) * messages / 2 / (std::max(ab, ba) * 1e9);
    return s;
  }

  std::vector<LinkSample> measure(const std::vector<UnitPair>& pairs) {
    ++rounds;
    std::vector<LinkSample> out;
    out.reserve(pairs.size());
    for (const auto& p : pairs) out.push_back(one(p.a, p.b));
    return out;
  }

  MeasureRound callback() {
    return [this](const std::vector<UnitPair>& p) { return measure(p); };
  }
};

// The phases and findings of a report, for failure messages.
inline std::string describe(const IsolationReport& r) {
  std::string s;
  for (const auto& p : r.phases) s += p + "\n";
  for (const auto& f : r.findings)
    s += std::string(fault_code(f.fault)) + " " + verdict_name(f.severity) + " " +
         std::to_string(f.a) + (f.b >= 0 ? "-" + std::to_string(f.b) : "") + ": " + f.reason + "\n";
  return s;
}

}  // namespace collie::probes::sim
