// Arrival skew (reports/arrival.h: who arrived last, by how much, from each rank's wait) and
// "is this normal?" (LinkCapacity, capacity_shares): the statistics, the naming rule both ways,
// the -I table lines and the JSON round trip.
#include "reports/arrival.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "core/stats.h"
#include "reports/json_io.h"
#include "reports/table.h"

namespace collie::reports {
namespace {

// waits[rank][iter]: every rank waits `base` us but `late_rank`, which arrives `late` us after
// the others and so waits that much less; `jitter` spreads every wait a little.
std::vector<std::vector<double>> waits(int world, int iters, int late_rank, double late,
                                       double base = 3000, double jitter = 20) {
  std::vector<std::vector<double>> w(world);
  for (int k = 0; k < world; ++k)
    for (int i = 0; i < iters; ++i)
      w[k].push_back(base - (k == late_rank ? late : 0) + jitter * ((i * 7 + k * 3) % 5) / 4);
  return w;
}

TEST(Arrival, LatenessFromWaits) {
  const ArrivalStats s = analyze_arrivals(waits(3, 10, 2, 1000, 3000, 0));
  EXPECT_EQ(s.iters, 10);
  ASSERT_EQ(s.ranks.size(), 3u);
  EXPECT_DOUBLE_EQ(s.ranks[2].late_p50_us, 1000);
  EXPECT_DOUBLE_EQ(s.ranks[2].last_fraction, 1);
  EXPECT_DOUBLE_EQ(s.ranks[2].wait_p50_us, 2000);
  EXPECT_DOUBLE_EQ(s.ranks[0].late_p50_us, 0);
  EXPECT_DOUBLE_EQ(s.skew_p50_us, 1000);
}

TEST(Arrival, MissingRankAndShortRows) {
  std::vector<std::vector<double>> w = {{10, 20, 30}, {}, {5, 6}};
  const ArrivalStats s = analyze_arrivals(w);
  EXPECT_EQ(s.iters, 2);
  EXPECT_EQ(s.missing, std::vector<int>{1});
  EXPECT_EQ(s.ranks.size(), 2u);
  EXPECT_EQ(analyze_arrivals({}).iters, 0);
  EXPECT_TRUE(late_ranks(analyze_arrivals({})).empty());
}

TEST(Arrival, LateRankNamedBothWays) {
  // Two ranks: the other ranks' median is the one other rank's.
  auto named = late_ranks(analyze_arrivals(waits(2, 20, 1, 2000)));
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].rank, 1);
  named = late_ranks(analyze_arrivals(waits(8, 20, 5, 900)));
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].rank, 5);
  // Late, but below the absolute floor: not named.
  EXPECT_TRUE(late_ranks(analyze_arrivals(waits(4, 20, 1, 300))).empty());
  // Every rank late now and then by a few ms (a busy host): nobody stands out.
  std::vector<std::vector<double>> noisy(4);
  for (int i = 0; i < 40; ++i)
    for (int k = 0; k < 4; ++k) noisy[k].push_back(3000 - ((i + k) % 4 == 0 ? 2500 : 0));
  EXPECT_TRUE(late_ranks(analyze_arrivals(noisy)).empty());
  // Two late ranks of four are both named (the others' median stays low).
  std::vector<std::vector<double>> two = waits(4, 20, 1, 2000);
  for (auto& v : two[3]) v -= 2000;
  EXPECT_EQ(late_ranks(analyze_arrivals(two)).size(), 2u);
}

TEST(Arrival, CpuStarvedRankBothWays) {
  EXPECT_EQ(cpu_starved({0.02, 0.6, 0.03}), std::vector<int>{1});
  EXPECT_EQ(cpu_starved({0.01, 0.5}), std::vector<int>{1});
  // Every rank queues for a core (a busy host): nobody stands out.
  EXPECT_TRUE(cpu_starved({0.8, 1.2, 0.9, 1.0}).empty());
  EXPECT_TRUE(cpu_starved({1.30, 1.26}).empty());
  EXPECT_EQ(cpu_starved({0.22, 0.92}), std::vector<int>{1});
  // Standing out, but too little to matter.
  EXPECT_TRUE(cpu_starved({0.01, 0.15, 0.01}).empty());
  EXPECT_TRUE(cpu_starved({0.9}).empty());
  std::vector<ResultRow> rows(3);
  rows[0].rank_cpu_wait = {0.01, 0.7};
  rows[1].rank_cpu_wait = {0.02, 0.6};
  rows[2].rank_cpu_wait = {0.5, 0.4};
  EXPECT_EQ(find_cpu_stragglers(rows), std::vector<int>{1});
  rows[1].rank_cpu_wait = {0.6, 0.05};
  EXPECT_TRUE(find_cpu_stragglers(rows).empty());  // 0.37 vs 0.38 over the run
  // Short rows of a healthy 2-rank run (each rank pinned to its own core) measured on this
  // machine: a rank's own threads queue behind its main thread, so a row can show 0.42 against
  // 0.17. Rank 1 stands out in 3 of these 4 rows, but over the run it queued 0.29 s per s against
  // 0.14: not named (a rule that judged row by row, and named the rank standing out in most
  // rows, named it).
  rows.resize(4, rows[0]);
  rows[0].rank_cpu_wait = {0.05, 0.29};
  rows[1].rank_cpu_wait = {0.17, 0.42};
  rows[2].rank_cpu_wait = {0.15, 0.36};
  rows[3].rank_cpu_wait = {0.2, 0.1};
  EXPECT_TRUE(find_cpu_stragglers(rows).empty());
  // The healthy run (of about 200 here) whose ranks differed most over the run: 0.34 s per s
  // against 0.125, named at a 0.2 s per s excess; not at 0.3.
  rows[0].rank_cpu_wait = {0.19, 0.10};
  rows[1].rank_cpu_wait = {0.11, 0.48};
  rows[2].rank_cpu_wait = {0.10, 0.26};
  rows[3].rank_cpu_wait = {0.10, 0.52};
  EXPECT_TRUE(find_cpu_stragglers(rows).empty());
  // A core shared with a busy loop, the other rank busy too (one more busy loop on the machine):
  // measured 0.70-0.88 against 0.33-0.35 in every row.
  for (auto& r : rows) r.rank_cpu_wait = {0.34, 0.79};
  EXPECT_EQ(find_cpu_stragglers(rows), std::vector<int>{1});
  // Rows that carry fewer ranks than the others (a rank that did not report) are left out.
  rows[3].rank_cpu_wait = {0.9};
  EXPECT_EQ(run_cpu_waits(rows), (std::vector<double>{0.34, 0.79}));
}

// late_ranks() and cpu_starved() take every rank's "median of the others" from one sort (perf -I
// runs at 100,000 ranks); they name exactly the ranks the rule, read directly, names.
TEST(Arrival, OthersMedianFromOneSortMatchesTheRule) {
  uint32_t seed = 12345;
  auto next = [&seed] {
    seed = seed * 1664525u + 1013904223u;
    return static_cast<double>((seed >> 8) % 4000);
  };
  auto others_median = [](const std::vector<double>& v, size_t k) {
    std::vector<double> o = v;
    o.erase(o.begin() + static_cast<long>(k));
    return median(o);
  };
  int named = 0;
  for (int world : {2, 3, 4, 5, 8, 33})
    for (int trial = 0; trial < 50; ++trial) {
      ArrivalStats s;
      s.iters = 1;
      std::vector<double> lates, shares;
      for (int k = 0; k < world; ++k) {
        // Mostly small with a few large values, and ties, so that the rule fires now and then.
        lates.push_back(next() < 600 ? 1000 + next() : std::floor(next() / 40));
        shares.push_back(next() < 600 ? 0.5 + next() / 4000 : std::floor(next() / 400) / 100);
        s.ranks.push_back({k, lates.back(), 0, 0, 0});
      }
      std::vector<int> want_late, want_cpu, got_late;
      for (int k = 0; k < world; ++k) {
        const double l = others_median(lates, k), c = others_median(shares, k);
        if (lates[k] >= 500 && lates[k] >= 3 * l) want_late.push_back(k);
        if (shares[k] >= c + CpuRule{}.excess && shares[k] >= CpuRule{}.stand_out * c)
          want_cpu.push_back(k);
      }
      for (const auto& r : late_ranks(s)) got_late.push_back(r.rank);
      std::sort(got_late.begin(), got_late.end());
      EXPECT_EQ(got_late, want_late) << "world " << world << " trial " << trial;
      EXPECT_EQ(cpu_starved(shares), want_cpu) << "world " << world << " trial " << trial;
      named += static_cast<int>(want_late.size() + want_cpu.size());
    }
  EXPECT_GT(named, 20);  // the comparison saw ranks named, not only empty lists
}

ResultRow row_with(int64_t size, std::vector<std::vector<double>> w) {
  ResultRow r;
  r.collective = "all_reduce";
  r.placement = "out";
  r.size_bytes = size;
  r.count = size / 4;
  r.dtype = "float";
  r.redop = "sum";
  r.wrong = 0;
  r.iters = static_cast<int>(w[0].size());
  r.busbw_gbps = static_cast<double>(size) / 1e6;
  r.rank_wait_us = std::move(w);
  r.arrival = analyze_arrivals(r.rank_wait_us);
  return r;
}

TEST(Arrival, RunLevelStragglerAndTableLines) {
  std::vector<ResultRow> rows = {row_with(1024, waits(4, 20, 2, 1500)),
                                 row_with(4096, waits(4, 20, 2, 1500)),
                                 row_with(16384, waits(4, 20, -1, 0))};
  EXPECT_EQ(find_arrival_stragglers(rows), std::vector<int>{2});  // 2 of 3 rows
  for (auto& r : rows) r.rank_cpu_wait = {0.01, 0.02, 0.9, 0.01};
  const std::string text = format_arrival_lines(rows, {"h0", "h1", "h2", "h3"}, 4);
  EXPECT_NE(text.find("# Straggler by arrival: rank 2 (h2) arrived last, 1510 us after the first "
                      "rank (median over its rows), in 2 of 3 rows"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("#       1024    out     20          2 (100 %)"), std::string::npos) << text;
  EXPECT_NE(text.find("     0.90 (  2)    0.01  2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# Straggler by CPU: rank 2 (h2) queued for a core 0.90 s per second of its "
                      "timed loops, the others 0.01 (means over 3 rows, the others' median)"),
            std::string::npos)
      << text;
  for (size_t at = 0; at < text.size(); at = text.find('\n', at) + 1)
    EXPECT_EQ(text[at], '#') << "every line a comment, as nccl-tests parsers skip them";
  rows.pop_back();
  for (auto& r : rows) r.rank_cpu_wait.clear();
  rows.push_back(row_with(16384, waits(4, 20, -1, 0)));
  rows.push_back(row_with(65536, waits(4, 20, -1, 0)));
  EXPECT_TRUE(find_arrival_stragglers(rows).empty());  // 2 of 4 is not more than half
  EXPECT_NE(format_arrival_lines(rows, {}, 4).find("# Arrival: no rank kept the others waiting"),
            std::string::npos);
  ResultRow plain;
  EXPECT_NE(format_arrival_lines({plain}, {}, 4).find("not measured"), std::string::npos);
  EXPECT_EQ(format_arrival_lines({plain}, {}, 1), "");
}

TEST(Arrival, JsonRoundTripRecomputesFromWaits) {
  RunResult r;
  r.meta.world_size = 4;
  r.rows = {row_with(1024, waits(4, 20, 2, 1500))};
  r.summary = summarize(r.rows, 4);
  EXPECT_EQ(r.summary->arrival_stragglers, std::vector<int>{2});
  nlohmann::json j = to_json(r);
  EXPECT_EQ(j["rows"][0]["arrival"]["late_ranks"], nlohmann::json::array({2}));
  EXPECT_EQ(j["summary"]["arrival_stragglers"], nlohmann::json::array({2}));
  j["rows"][0]["arrival"]["late_ranks"] = nlohmann::json::array({0});  // ignored on reading
  const RunResult back = run_from_json(j);
  EXPECT_EQ(back.rows[0].rank_wait_us, r.rows[0].rank_wait_us);
  ASSERT_EQ(back.rows[0].arrival.ranks.size(), 4u);
  EXPECT_EQ(late_ranks(back.rows[0].arrival)[0].rank, 2);
  EXPECT_FALSE(j["rows"][0].contains("rank_cpu_wait"));
  r.rows[0].rank_cpu_wait = {0.1, 0.2, 0.9, 0.1};
  EXPECT_EQ(run_from_json(to_json(r)).rows[0].rank_cpu_wait, r.rows[0].rank_cpu_wait);
  j["rows"][0]["rank_cpu_wait"] = {0.1, -1};
  EXPECT_THROW(run_from_json(j), InvalidArgument);
  j["rows"][0].erase("rank_cpu_wait");
  j["rows"][0]["rank_wait_us"][1][3] = -5;
  EXPECT_THROW(run_from_json(j), InvalidArgument);
  j["rows"][0]["rank_wait_us"] = "soon";
  EXPECT_THROW(run_from_json(j), InvalidArgument);
}

TEST(Capacity, SharesLinesAndJson) {
  RunResult r;
  r.rows = {row_with(1024, waits(2, 4, -1, 0)), row_with(1 << 20, waits(2, 4, -1, 0))};
  r.rows[1].collective = "all_gather";
  r.capacity = LinkCapacity{"loopback-tcp", "TCP over 127.0.0.1, measured in-process", "h0", 2.0};
  const std::vector<CapacityShare> s = capacity_shares(r.rows, *r.capacity);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].collective, "all_reduce");
  EXPECT_NEAR(s[1].percent, 1.048576 / 2.0 * 100, 1e-9);
  const std::string text = format_capacity_lines(r.rows, *r.capacity);
  EXPECT_NE(text.find("# Is this normal? This link can carry 2 GB/s: TCP over 127.0.0.1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# all_gather: peak busbw 1.05 GB/s (at 1048576 B) is 52 % of what this "
                      "link can do"),
            std::string::npos)
      << text;
  const nlohmann::json j = to_json(r);
  EXPECT_DOUBLE_EQ(j["capacity"]["collectives"][1]["percent"].get<double>(), s[1].percent);
  const RunResult back = run_from_json(j);
  ASSERT_TRUE(back.capacity);
  EXPECT_EQ(back.capacity->kind, "loopback-tcp");
  EXPECT_DOUBLE_EQ(back.capacity->gbps, 2.0);
  const LinkCapacity unknown{"nic", "no interface to another host is known here", "h0", 0};
  EXPECT_TRUE(capacity_shares(r.rows, unknown).empty());
  EXPECT_EQ(format_capacity_lines(r.rows, unknown),
            "# Is this normal? Not compared: no interface to another host is known here\n");
}

}  // namespace
}  // namespace collie::reports
