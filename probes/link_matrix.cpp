#include "probes/link_matrix.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "comm/rendezvous.h"
#include "reports/heat_map_html.h"
#include "reports/result.h"

namespace collie::probes {

double RankMatrix::at(int i, int j) const {
  const auto it = v_.find(static_cast<uint64_t>(i) * n_ + j);
  return it == v_.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
}

void RankMatrix::set(int i, int j, double x) { v_[static_cast<uint64_t>(i) * n_ + j] = x; }

void RankMatrix::for_each(const std::function<void(int, int, double)>& fn) const {
  for (const auto& [k, x] : v_) {
    const int i = static_cast<int>(k / n_), j = static_cast<int>(k % n_);
    if (i != j && !std::isnan(x)) fn(i, j, x);
  }
}

std::vector<double> RankMatrix::values() const {
  std::vector<double> out;
  for_each([&](int, int, double x) { out.push_back(x); });
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
  m.for_each([&](int i, int j, double x) {
    const bool cross = one || hosts.at(i) != hosts.at(j);
    if (cross) ref.push_back(x);
    Deviation d;
    d.a = i;
    d.b = j;
    d.value = x;
    d.name = one ? fmt::format("{}->{}", i, j)
                 : fmt::format("{}->{} ({}->{})", i, j, hosts.at(i), hosts.at(j));
    out.push_back(std::move(d));
  });
  const double med = median(ref);
  for (auto& d : out) d.deviation = deviation(d.value, med);
  std::stable_sort(out.begin(), out.end(),
                   [](const Deviation& x, const Deviation& y) { return x.value < y.value; });
  return out;
}

std::vector<Deviation> host_deviations(const RankMatrix& m, const std::vector<std::string>& hosts) {
  const std::vector<std::string> eff = effective_hosts(hosts);
  std::map<std::string, std::vector<double>> per_host;
  m.for_each([&](int i, int j, double x) {
    if (eff.at(i) == eff.at(j)) return;
    per_host[eff.at(i)].push_back(x);
    per_host[eff.at(j)].push_back(x);
  });
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

namespace {

constexpr char kShades[] = " .:-=+*#%@";
constexpr int kLevels = sizeof(kShades) - 2;

std::string legend(bool higher_is_better, double lo, double hi, const std::string& unit) {
  return fmt::format("'{}' = {} {:.4g} ... '{}' = {} {:.4g} {}", kShades[1],
                     higher_is_better ? "lowest" : "highest", higher_is_better ? lo : hi,
                     kShades[kLevels], higher_is_better ? "highest" : "lowest",
                     higher_is_better ? hi : lo, unit);
}

char shade(double x, double lo, double hi, bool higher_is_better) {
  double t = hi > lo ? (x - lo) / (hi - lo) : 1.0;
  if (!higher_is_better) t = 1.0 - t;
  return kShades[1 + static_cast<int>(std::lround(t * (kLevels - 1)))];
}

std::string label_of(const std::vector<std::string>& labels, int i) {
  return i < static_cast<int>(labels.size()) ? labels[i] : std::to_string(i);
}

// The worst rows of a large matrix, each row scored by the median of its links (both
// directions), then how the rows spread around the median row.
std::string worst_rows(const RankMatrix& m, bool higher_is_better, const std::string& unit,
                       const std::vector<std::string>& labels) {
  std::vector<reports::MatrixCell> cells;
  cells.reserve(m.cells());
  m.for_each([&](int i, int j, double x) { cells.push_back({i, j, x}); });
  const reports::RowSummary sum = reports::summarize_rows(cells, higher_is_better);
  const size_t shown = std::min<size_t>(sum.rows.size(), kHeatMapWorstRows);
  std::string out = fmt::format(
      "      {} rows: the {} worst by their median link (both directions), shade of "
      "the median: {}\n",
      m.size(), shown, legend(higher_is_better, sum.lo, sum.hi, unit));
  for (size_t k = 0; k < shown; ++k) {
    const reports::RowScore& row = sum.rows[k];
    out +=
        fmt::format("      {} {}: median {:.4g} {} over {} link(s), worst {:.4g} with {}\n",
                    shade(row.median, sum.lo, sum.hi, higher_is_better), label_of(labels, row.row),
                    row.median, unit, row.links, row.worst, label_of(labels, row.worst_peer));
  }
  // How far each row's median is from the median row's: the shape of the whole matrix.
  out += fmt::format(
      "      rows by median against the median row ({:.4g} {}): within 10%: {}, 10-25% worse: {}, "
      "25-50% worse: {}, more than 50% worse: {}, nothing measured: {}\n",
      sum.reference, unit, sum.spread[0], sum.spread[1], sum.spread[2], sum.spread[3],
      m.size() - static_cast<int>(sum.rows.size()));
  return out;
}

}  // namespace

std::string heat_map(const RankMatrix& m, bool higher_is_better, const std::string& unit,
                     const std::vector<std::string>& labels) {
  if (m.size() > kHeatMapFullRows) return worst_rows(m, higher_is_better, unit, labels);
  const std::vector<double> vals = m.values();
  const double lo = vals.empty() ? 0 : *std::min_element(vals.begin(), vals.end());
  const double hi = vals.empty() ? 0 : *std::max_element(vals.begin(), vals.end());
  std::string out = "      ";
  for (int j = 0; j < m.size(); ++j) out += fmt::format("{:>2}", j % 100);
  out += "\n";
  for (int i = 0; i < m.size(); ++i) {
    out += fmt::format("{:>5} ", i);
    for (int j = 0; j < m.size(); ++j) {
      const double x = m.at(i, j);
      out += ' ';
      out += i == j ? '\\' : std::isnan(x) ? 'X' : shade(x, lo, hi, higher_is_better);
    }
    if (i < static_cast<int>(labels.size())) out += "  " + labels[i];
    out += "\n";
  }
  out += "      shade: " + legend(higher_is_better, lo, hi, unit) + "; X = no result\n";
  return out;
}

std::string host_label(const std::string& host, const std::vector<std::string>& hosts) {
  std::vector<int> ranks;
  for (size_t i = 0; i < hosts.size(); ++i)
    if (hosts[i] == host) ranks.push_back(static_cast<int>(i));
  if (ranks.empty()) return host;
  return fmt::format("{} (rank{} {})", host, ranks.size() == 1 ? "" : "s", format_ranks(ranks));
}

HostIndex::HostIndex(const std::vector<std::string>& hosts) {
  for (size_t i = 0; i < hosts.size(); ++i) by_host_[hosts[i]].push_back(static_cast<int>(i));
}

const std::vector<int>& HostIndex::ranks(const std::string& host) const {
  static const std::vector<int> kNone;
  const auto it = by_host_.find(host);
  return it == by_host_.end() ? kNone : it->second;
}

std::string HostIndex::label(const std::string& host) const {
  const std::vector<int>& r = ranks(host);
  if (r.empty()) return host;
  return fmt::format("{} (rank{} {})", host, r.size() == 1 ? "" : "s", format_ranks(r));
}

}  // namespace collie::probes
