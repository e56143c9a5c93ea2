// RankRanges and compress_hosts: rank sets and host lists as people read them at any N.
#include "core/rank_ranges.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "discovery/hostlist.h"

namespace collie {
namespace {

TEST(RankRanges, JoinsNeighboursAndCountsEachRankOnce) {
  RankRanges r;
  for (int x : {7, 3, 1, 2, 0, 9, 8}) r.add(x);
  EXPECT_EQ(r.count(), 7);
  EXPECT_EQ(r.str(), "0-3, 7-9");
  r.add(2, 8);  // overlaps both: counted once
  EXPECT_EQ(r.count(), 10);
  EXPECT_EQ(r.str(), "0-9");
  RankRanges o = RankRanges::of(20, 29);
  o.merge(r);
  EXPECT_EQ(o.count(), 20);
  EXPECT_EQ(o.str(), "0-9, 20-29");
  EXPECT_TRUE(o.lists(25));
  EXPECT_FALSE(o.lists(15));
  EXPECT_EQ(o.first_ranks(3), (std::vector<int>{0, 1, 2}));
}

TEST(RankRanges, ShowsAFewRangesThenCounts) {
  RankRanges r;
  for (int x = 0; x < 100; x += 2) r.add(x);
  EXPECT_EQ(r.count(), 50);
  EXPECT_EQ(r.str(3), "0, 2, 4, ... (47 more)");
  EXPECT_EQ(with_commas(16352), "16,352");
  EXPECT_EQ(with_commas(999), "999");
  EXPECT_EQ(with_commas(1000000), "1,000,000");
}

// A scattered set costs the cap, not its size; the count stays exact.
TEST(RankRanges, ListingIsCappedCountIsNot) {
  RankRanges r(16);
  for (int x = 0; x < 100000; x += 2) r.add(x);
  EXPECT_EQ(r.count(), 50000);
  EXPECT_TRUE(r.truncated());
  EXPECT_EQ(r.ranges().size(), 16u);
  RankRanges other(16);
  for (int x = 1; x < 100; x += 2) other.add(x);
  r.merge(other);
  EXPECT_EQ(r.count(), 50050);
}

TEST(RankRanges, FromPartsRefusesWhatIsNotASet) {
  RankRanges out;
  std::string why;
  EXPECT_TRUE(RankRanges::from_parts({{0, 3}, {5, 5}}, 5, false, 0, 10, &out, &why)) << why;
  EXPECT_EQ(out.str(), "0-3, 5");
  EXPECT_FALSE(RankRanges::from_parts({{0, 3}, {3, 5}}, 7, false, 0, 10, &out, &why));
  EXPECT_NE(why.find("overlaps"), std::string::npos) << why;
  EXPECT_FALSE(RankRanges::from_parts({{0, 3}, {4, 5}}, 6, false, 0, 10, &out, &why));  // touching
  EXPECT_FALSE(RankRanges::from_parts({{8, 12}}, 5, false, 0, 10, &out, &why));
  EXPECT_NE(why.find("not within"), std::string::npos) << why;
  EXPECT_FALSE(RankRanges::from_parts({{0, 3}}, 5, false, 0, 10, &out, &why));  // count
  EXPECT_TRUE(RankRanges::from_parts({{0, 3}}, 6, true, 0, 10, &out, &why)) << why;
  EXPECT_FALSE(RankRanges::from_parts({{0, 3}}, 11, true, 0, 10, &out, &why));  // > span
}

TEST(CompressHosts, WritesSlurmHostlists) {
  EXPECT_EQ(compress_hosts({"node518", "node517", "node520", "node519"}), "node[517-520]");
  EXPECT_EQ(compress_hosts({"node1", "node3", "node2", "node7", "login"}), "login,node[1-3,7]");
  EXPECT_EQ(compress_hosts({"n08", "n09", "n10"}), "n[08-10]");
  EXPECT_EQ(compress_hosts({"a1-ib", "a2-ib", "b3"}), "a[1-2]-ib,b3");
  EXPECT_EQ(compress_hosts({"x", "x", "x"}), "x");
  EXPECT_EQ(compress_hosts({}), "");
}

TEST(CompressHosts, LongListsEndWithACount) {
  std::vector<std::string> hosts;
  for (int i = 0; i < 1000; ++i)
    hosts.push_back("gpu" + std::to_string(i * 2) + "-rack" + std::to_string(i));
  const std::string s = compress_hosts(hosts, 120);
  EXPECT_LE(s.size(), 120u + 30) << s;
  EXPECT_NE(s.find("more hosts)"), std::string::npos) << s;
}

// Whatever the names, expand_hostlist reads the compressed list back as the same set.
TEST(CompressHosts, ExpandReadsBackTheSameSet) {
  std::mt19937 rng(7);
  const std::vector<std::string> prefixes = {"node", "gpu-a", "n", "rack1n", ""};
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string> hosts;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      const std::string& p = prefixes[rng() % prefixes.size()];
      const int v = static_cast<int>(rng() % 120);
      std::string num = std::to_string(v);
      if (rng() % 3 == 0) num = (v < 10 ? "00" : v < 100 ? "0" : "") + num;  // padded
      hosts.push_back(p + num + (rng() % 4 == 0 ? "-ib" : ""));
    }
    const std::string expr = compress_hosts(hosts, 100000);
    std::vector<std::string> back = expand_hostlist(expr);
    std::set<std::string> want(hosts.begin(), hosts.end());
    std::set<std::string> got(back.begin(), back.end());
    EXPECT_EQ(got, want) << expr;
    EXPECT_EQ(back.size(), got.size()) << "a host written twice: " << expr;
  }
}

}  // namespace
}  // namespace collie
