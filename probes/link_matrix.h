#pragma once
// Matrix and deviation math shared by the probes: per-link and per-host deviation from
// the median, and a text heat map. Pure functions on values; thread-safe.
#include <cstddef>
#include <string>
#include <vector>

#include "core/stats.h"  // median, percentile

namespace collie::probes {

// Square matrix over ranks; value(i, j) is NaN where nothing was measured (i == j, broken pair).
class RankMatrix {
 public:
  RankMatrix() : RankMatrix(0) {}
  explicit RankMatrix(int n);
  int size() const { return n_; }
  double at(int i, int j) const { return v_[static_cast<size_t>(i) * n_ + j]; }
  void set(int i, int j, double x) { v_[static_cast<size_t>(i) * n_ + j] = x; }
  // Every measured off-diagonal value.
  std::vector<double> values() const;

 private:
  int n_;
  std::vector<double> v_;
};

// A link (directed i -> j) or host with its value and its deviation from the reference median:
// (value - median) / median, so -0.4 means 40 % below the median.
struct Deviation {
  std::string name;  // "3->5 (hostB->hostC)" or "hostB"
  int a = -1, b = -1;
  double value = 0;
  double deviation = 0;
};

// Links sorted from the lowest value, each with its deviation from the median of the links
// between different hosts (same-host links use shared memory or loopback and would hide a slow
// NIC). When every rank is on one host all links are used. hosts[i] = host of rank i.
std::vector<Deviation> link_deviations(const RankMatrix& m, const std::vector<std::string>& hosts);

// One score per host: the median of the values of its links to other hosts (both directions);
// each with its deviation from the median over hosts. Sorted from the lowest score. Hosts with
// no measured cross-host link are left out. With a single host, ranks stand in for hosts.
std::vector<Deviation> host_deviations(const RankMatrix& m, const std::vector<std::string>& hosts);

// Text heat map: one row per rank, one cell per peer with a shade from ' .:-=+*#%@' relative to
// the largest value (higher value = darker when higher_is_better, else the reverse), 'X' for a
// missing value and '\' on the diagonal, followed by a legend line.
std::string heat_map(const RankMatrix& m, bool higher_is_better, const std::string& unit);

// "0-3, 5" style list of hosts -> ranks for messages, e.g. "hostB (ranks 2, 3)".
std::string host_label(const std::string& host, const std::vector<std::string>& hosts);

}  // namespace collie::probes
