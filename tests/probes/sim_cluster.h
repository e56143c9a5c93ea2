#pragma once
// A simulated cluster for the isolation schedule (probes/isolate.h): hosts with a NIC speed,
// injected slow hosts, slow links, flapping links, high-latency hosts and measurement noise
// (per-message jitter plus transient slowdowns of whole measurements, the "busy machine").
// measure() answers one round the way the real ranks would. Deterministic for a seed.
#include <cmath>
#include <map>
#include <random>
#include <set>
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
  int messages = 10;               // timed messages per measurement (both directions)
  int64_t bytes = 4 << 20;
  double setup_s = 0.05;                             // connect + latency ping-pong
  double timeout_s = 5;                              // a failed measurement costs the step deadline
  std::map<int, double> slow_hosts;                  // host -> speed factor
  std::map<std::pair<int, int>, double> slow_links;  // (a < b) -> speed factor
  std::set<std::pair<int, int>> flapping;            // down in every other round, from round 1
  // Down in every other measurement *of the link* (its 1st, 3rd, ...), whichever rounds those
  // are: the netns test's flapping link (tests/probes/isolate_netns_test.sh flapping_link).
  std::set<std::pair<int, int>> flapping_per_use;
  std::map<std::pair<int, int>, int> uses;  // measurements of each flapping_per_use link
  std::map<int, double> latency_us;         // host -> one-way latency (default 5)
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
    if (slow_hosts.count(a)) speed *= slow_hosts.at(a);
    if (slow_hosts.count(b)) speed *= slow_hosts.at(b);
    if (slow_links.count({a, b})) speed *= slow_links.at({a, b});
    if (burst_rounds.count(rounds)) speed *= burst_factor;
    std::uniform_real_distribution<double> u(0, 1);
    if (u(rng) < transient_rate) speed *= transient_factor;
    std::normal_distribution<double> n(1, jitter);
    for (int i = 0; i < messages; ++i) s.gbps.push_back(speed * std::max(0.2, n(rng)));
    auto lat = [&](int h) { return latency_us.count(h) ? latency_us.at(h) : 5.0; };
    s.lat_us = std::max(lat(a), lat(b)) * std::max(0.5, n(rng));
    s.seconds = setup_s + static_cast<double>(bytes) * messages / (speed * 1e9);
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

}  // namespace collie::probes::sim
