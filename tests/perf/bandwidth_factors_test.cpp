// Every registered perf collective's algbw and busbw factors against nccl-tests' own formulas
// (nccl-tests doc/PERFORMANCE.md and each <coll>.cu's GetBw), written out here independently of
// src/perf: a collective added without an entry in this table fails the test.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <string>

#include "perf/collective.h"

namespace collie::perf {
namespace {

struct Expected {
  // algbw counts count * dtype size * ranks_factor(n) bytes; busbw = algbw * bus(n).
  std::function<int(int)> ranks_factor;
  std::function<double(int)> bus;
};

const std::map<std::string, Expected>& nccl_tests_factors() {
  auto one = [](int) { return 1; };
  auto all = [](int n) { return n; };
  auto n1_over_n = [](int n) { return static_cast<double>(n - 1) / n; };
  auto unit = [](int) { return 1.0; };
  static const std::map<std::string, Expected> m = {
      {"all_reduce", {one, [](int n) { return 2.0 * (n - 1) / n; }}},
      {"all_gather", {all, n1_over_n}},
      {"reduce_scatter", {all, n1_over_n}},
      {"alltoall", {all, n1_over_n}},
      // alltoallv: algbw counts the busiest rank's bytes (Layout::algbw_count, checked in
      // traffic_test.cpp), busbw the same (n-1)/n.
      {"alltoallv", {one, n1_over_n}},
      {"gather", {all, n1_over_n}},
      {"scatter", {all, n1_over_n}},
      {"broadcast", {one, unit}},
      {"reduce", {one, unit}},
      {"sendrecv", {one, unit}},
  };
  return m;
}

TEST(BandwidthFactors, EveryCollectiveMatchesNcclTests) {
  std::set<std::string> seen;
  for (const CollectiveDescriptor* d : all_collectives()) {
    seen.insert(d->name);
    if (d->latency_only) continue;  // barrier: no bytes, no bandwidth
    const auto it = nccl_tests_factors().find(d->name);
    ASSERT_NE(it, nccl_tests_factors().end())
        << d->name << ": no nccl-tests factors in this test's table; add them";
    ASSERT_NE(d->algbw_ranks_factor, nullptr) << d->name;
    ASSERT_NE(d->busbw_factor, nullptr) << d->name;
    for (int n : {1, 2, 3, 4, 8, 16, 1024}) {
      EXPECT_EQ(d->algbw_ranks_factor(n), it->second.ranks_factor(n)) << d->name << " n=" << n;
      EXPECT_DOUBLE_EQ(d->busbw_factor(n), it->second.bus(n)) << d->name << " n=" << n;
    }
  }
  for (const auto& [name, f] : nccl_tests_factors())
    EXPECT_TRUE(seen.count(name)) << name << " is not registered";
}

}  // namespace
}  // namespace collie::perf
