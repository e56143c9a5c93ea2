#include "probes/link_matrix.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "comm/rendezvous.h"
#include "reports/result.h"

namespace collie::probes {

RankMatrix::RankMatrix(int n)
    : n_(n), v_(static_cast<size_t>(n) * n, std::numeric_limits<double>::quiet_NaN()) {}

std::vector<double> RankMatrix::values() const {
  std::vector<double> out;
  for (int i = 0; i < n_; ++i)
    for (int j = 0; j < n_; ++j)
      if (i != j && !std::isnan(at(i, j))) out.push_back(at(i, j));
  return out;
}

namespace {

double deviation(double value, double med) {
  if (std::isnan(med) || med == 0) return 0;
  return (value - med) / med;
}

bool single_host(const std::vector<std::string>& hosts) {
  return std::set<std::string>(hosts.begin(), hosts.end()).size() <= 1;
}

// With one host, every rank is its own "host" so a slow rank can still be named.
std::vector<std::string> effective_hosts(const std::vector<std::string>& hosts) {
  if (!single_host(hosts)) return hosts;
  std::vector<std::string> out;
  for (size_t i = 0; i < hosts.size(); ++i) out.push_back(fmt::format("rank {}", i));
  return out;
}

}  // namespace

std::vector<Deviation> link_deviations(const RankMatrix& m, const std::vector<std::string>& hosts) {
  const bool one = single_host(hosts);
  std::vector<double> ref;
  std::vector<Deviation> out;
  for (int i = 0; i < m.size(); ++i) {
    for (int j = 0; j < m.size(); ++j) {
      if (i == j || std::isnan(m.at(i, j))) continue;
      const bool cross = one || hosts.at(i) != hosts.at(j);
      if (cross) ref.push_back(m.at(i, j));
      Deviation d;
      d.a = i;
      d.b = j;
      d.value = m.at(i, j);
      d.name = one ? fmt::format("{}->{}", i, j)
                   : fmt::format("{}->{} ({}->{})", i, j, hosts.at(i), hosts.at(j));
      out.push_back(std::move(d));
    }
  }
  const double med = median(ref);
  for (auto& d : out) d.deviation = deviation(d.value, med);
  std::stable_sort(out.begin(), out.end(),
                   [](const Deviation& x, const Deviation& y) { return x.value < y.value; });
  return out;
}

std::vector<Deviation> host_deviations(const RankMatrix& m, const std::vector<std::string>& hosts) {
  const std::vector<std::string> eff = effective_hosts(hosts);
  std::map<std::string, std::vector<double>> per_host;
  for (int i = 0; i < m.size(); ++i) {
    for (int j = 0; j < m.size(); ++j) {
      if (i == j || std::isnan(m.at(i, j)) || eff.at(i) == eff.at(j)) continue;
      per_host[eff.at(i)].push_back(m.at(i, j));
      per_host[eff.at(j)].push_back(m.at(i, j));
    }
  }
  std::vector<Deviation> out;
  std::vector<double> scores;
  for (const auto& [host, vals] : per_host) {
    Deviation d;
    d.name = host;
    d.value = median(vals);
    scores.push_back(d.value);
    out.push_back(std::move(d));
  }
  const double med = median(scores);
  for (auto& d : out) d.deviation = deviation(d.value, med);
  std::stable_sort(out.begin(), out.end(),
                   [](const Deviation& x, const Deviation& y) { return x.value < y.value; });
  return out;
}

std::string heat_map(const RankMatrix& m, bool higher_is_better, const std::string& unit) {
  static constexpr char kShades[] = " .:-=+*#%@";
  constexpr int kLevels = sizeof(kShades) - 2;
  const std::vector<double> vals = m.values();
  const double lo = vals.empty() ? 0 : *std::min_element(vals.begin(), vals.end());
  const double hi = vals.empty() ? 0 : *std::max_element(vals.begin(), vals.end());
  std::string out = "      ";
  for (int j = 0; j < m.size(); ++j) out += fmt::format("{:>2}", j % 100);
  out += "\n";
  for (int i = 0; i < m.size(); ++i) {
    out += fmt::format("{:>5} ", i);
    for (int j = 0; j < m.size(); ++j) {
      char c;
      if (i == j) {
        c = '\\';
      } else if (std::isnan(m.at(i, j))) {
        c = 'X';
      } else {
        double t = hi > lo ? (m.at(i, j) - lo) / (hi - lo) : 1.0;
        if (!higher_is_better) t = 1.0 - t;
        c = kShades[1 + static_cast<int>(std::lround(t * (kLevels - 1)))];
      }
      out += ' ';
      out += c;
    }
    out += "\n";
  }
  out += fmt::format("      shade: '{}' = {} {:.4g} ... '{}' = {} {:.4g} {}; X = no result\n",
                     kShades[1], higher_is_better ? "lowest" : "highest",
                     higher_is_better ? lo : hi, kShades[kLevels],
                     higher_is_better ? "highest" : "lowest", higher_is_better ? hi : lo, unit);
  return out;
}

std::string host_label(const std::string& host, const std::vector<std::string>& hosts) {
  std::vector<int> ranks;
  for (size_t i = 0; i < hosts.size(); ++i)
    if (hosts[i] == host) ranks.push_back(static_cast<int>(i));
  if (ranks.empty()) return host;
  return fmt::format("{} (rank{} {})", host, ranks.size() == 1 ? "" : "s", format_ranks(ranks));
}

}  // namespace collie::probes
