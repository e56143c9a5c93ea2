#pragma once
// Test helper for pairwise results built from survey rows (merge_pairwise + isolate_result):
// re-measurements answered from the survey's own matrix, so what the survey saw reproduces.
#include <vector>

#include "probes/pairwise.h"

namespace collie::probes::fixture {

// Each direction of a unit pair as its measuring ranks' matrix entry (`samples` equal samples),
// the latency as measured, each host's capacity as its rank reported it. `r` must outlive the
// callback.
inline MeasureRound from_matrix(const PairwiseResult& r, int samples = 1) {
  return [&r, samples](const std::vector<UnitPair>& pairs) {
    std::vector<LinkSample> out;
    for (const auto& p : pairs) {
      LinkSample s;
      s.a = p.a;
      s.b = p.b;
      const int i = r.unit_rank.at(p.a), j = r.unit_rank.at(p.b);
      s.ab.assign(samples, r.bw_gbps.at(i, j));
      s.ba.assign(samples, r.bw_gbps.at(j, i));
      s.lat_us = r.latency_us.at(i, j);
      s.cap_a = r.capacity.at(p.a);
      s.cap_b = r.capacity.at(p.b);
      out.push_back(s);
    }
    return out;
  };
}

}  // namespace collie::probes::fixture
