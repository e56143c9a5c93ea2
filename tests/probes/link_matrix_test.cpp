#include "probes/link_matrix.h"

#include <gtest/gtest.h>

#include <cmath>

namespace collie::probes {
namespace {

TEST(Stats, MedianIgnoresNaN) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({NAN, 5, NAN}), 5);
  EXPECT_TRUE(std::isnan(median({})));
}

// 8 ranks on 4 hosts (2 each); host "c" (ranks 4, 5) has a slow NIC: its cross-host links run
// at 1 GB/s, the others at 10, same-host links at 50 (shared memory).
RankMatrix slow_host_matrix(std::vector<std::string>* hosts) {
  *hosts = {"a", "a", "b", "b", "c", "c", "d", "d"};
  RankMatrix m(8);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      if (i == j) continue;
      if ((*hosts)[i] == (*hosts)[j])
        m.set(i, j, 50);
      else if ((*hosts)[i] == "c" || (*hosts)[j] == "c")
        m.set(i, j, 1);
      else
        m.set(i, j, 10);
    }
  return m;
}

TEST(Stats, HostDeviationsNameTheSlowHost) {
  std::vector<std::string> hosts;
  const RankMatrix m = slow_host_matrix(&hosts);
  const auto h = host_deviations(m, hosts);
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[0].name, "c");
  EXPECT_DOUBLE_EQ(h[0].value, 1);
  EXPECT_NEAR(h[0].deviation, -0.9, 1e-9);  // median host is 10 GB/s
  for (size_t i = 1; i < h.size(); ++i) EXPECT_NEAR(h[i].deviation, 0, 1e-9) << h[i].name;
  EXPECT_EQ(host_label("c", hosts), "c (ranks 4, 5)");
}

TEST(Stats, LinkDeviationsUseCrossHostMedian) {
  std::vector<std::string> hosts;
  RankMatrix m = slow_host_matrix(&hosts);
  const auto l = link_deviations(m, hosts);
  ASSERT_EQ(l.size(), 56u);
  EXPECT_DOUBLE_EQ(l.front().value, 1);
  // 48 cross-host links: 24 at 1 and 24 at 10 -> median 5.5.
  EXPECT_NEAR(l.front().deviation, (1 - 5.5) / 5.5, 1e-9);
  EXPECT_NE(l.front().name.find("c"), std::string::npos);
  EXPECT_DOUBLE_EQ(l.back().value, 50);
}

TEST(Stats, SingleHostRanksStandInForHosts) {
  std::vector<std::string> hosts(4, "one");
  RankMatrix m(4);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      if (i != j) m.set(i, j, (i == 2 || j == 2) ? 2 : 8);
  const auto h = host_deviations(m, hosts);
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[0].name, "rank 2");
  EXPECT_LT(h[0].deviation, -0.5);
}

TEST(Stats, HeatMapMarksMissingAndDiagonal) {
  RankMatrix m(3);
  m.set(0, 1, 10);
  m.set(1, 0, 10);
  m.set(0, 2, 1);
  m.set(2, 0, 1);
  m.set(1, 2, 5);  // 2 -> 1 missing
  const std::string s = heat_map(m, true, "GB/s");
  EXPECT_NE(s.find('X'), std::string::npos) << s;
  EXPECT_NE(s.find('\\'), std::string::npos) << s;
  EXPECT_NE(s.find("'@' = highest 10 GB/s"), std::string::npos) << s;
  EXPECT_NE(s.find("'.' = lowest 1"), std::string::npos) << s;
}

}  // namespace
}  // namespace collie::probes
