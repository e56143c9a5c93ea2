#pragma once
// Matrix and deviation math shared by the probes: a sparse rank (or host) matrix, per-link and
// per-host deviation from the median, ranks by host, and a text heat map that stays readable at
// any size. Pure functions on values; thread-safe.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/stats.h"  // median, percentile

namespace collie::probes {

// Square matrix over ranks or hosts; value(i, j) is NaN where nothing was measured (i == j,
// broken pair). Sparse: only the cells set are stored (~64 bytes each), so a quick survey of N
// hosts, which measures O(N) cells, costs O(N) memory, never N x N.
class RankMatrix {
 public:
  RankMatrix() = default;
  explicit RankMatrix(int n) : n_(n) {}
  int size() const { return n_; }
  double at(int i, int j) const;
  void set(int i, int j, double x);
  // Every measured off-diagonal value, row by row.
  std::vector<double> values() const;
  // fn(i, j, value) for every measured off-diagonal cell, row by row.
  void for_each(const std::function<void(int, int, double)>& fn) const;
  size_t cells() const { return v_.size(); }

 private:
  int n_ = 0;
  std::map<uint64_t, double> v_;  // key i * n + j
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

// Text heat map. Up to kHeatMapFullRows rows: one row per rank (or host), one cell per peer with
// a shade from ' .:-=+*#%@' relative to the largest value (higher value = darker when
// higher_is_better, else the reverse), 'X' for a missing value and '\' on the diagonal, each row
// followed by its label when `labels` has one, then a legend line. Larger: the kHeatMapWorstRows
// worst rows by their median link (both directions; with their label, links measured, median,
// worst link and its peer), then how many rows fall how far from the median row, so a matrix of
// thousands of hosts reads on one screen.
inline constexpr int kHeatMapFullRows = 64;
inline constexpr int kHeatMapWorstRows = 16;
std::string heat_map(const RankMatrix& m, bool higher_is_better, const std::string& unit,
                     const std::vector<std::string>& labels = {});

// "hostB (ranks 2, 3)" for messages: the host with the ranks it holds. O(N) per call; callers
// naming many hosts build a HostIndex once.
std::string host_label(const std::string& host, const std::vector<std::string>& hosts);

// Ranks by host, built once in O(N) from hosts[rank]; the same labels as host_label.
class HostIndex {
 public:
  HostIndex() = default;
  explicit HostIndex(const std::vector<std::string>& hosts);
  // The ranks on `host`, ascending (empty for a host not in the list).
  const std::vector<int>& ranks(const std::string& host) const;
  std::string label(const std::string& host) const;
  size_t hosts() const { return by_host_.size(); }

 private:
  std::unordered_map<std::string, std::vector<int>> by_host_;
};

}  // namespace collie::probes
