// Golden tests: the table must be byte-identical to nccl-tests 2.19's.
#include "reports/table.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "reports/markup.h"
#include "reports/render.h"

namespace collie::reports {
namespace {

ResultRow row(double t, double alg, double bus, int64_t wrong) {
  ResultRow r;
  r.collective = "all_reduce";
  r.size_bytes = 33554432;
  r.count = 8388608;
  r.dtype = "float";
  r.redop = "sum";
  r.root = -1;
  r.time_us = t;
  r.algbw_gbps = alg;
  r.busbw_gbps = bus;
  r.wrong = wrong;
  return r;
}

TEST(Table, RowMatchesNcclTestsByteForByte) {
  ResultRow out = row(123.45, 271.82, 475.69, 0), in = row(120.11, 279.37, 488.89, 0);
  EXPECT_EQ(format_row(&out, &in),
            "    33554432       8388608     float     sum      -1   123.45  271.82  475.69       0"
            "   120.11  279.37  488.89       0");
}

TEST(Table, PrecisionShrinksToFitTheWidth) {
  EXPECT_EQ(format_float(1.5, 7), "   1.50");
  // nccl-tests picks the precision from the digits before rounding, so 9999.999 overflows by one
  // column there too; byte compatibility means keeping that.
  EXPECT_EQ(format_float(9999.999, 7), "10000.00");
  EXPECT_EQ(format_float(12345.6, 7), "12345.6");
  EXPECT_EQ(format_float(123456.7, 7), " 123457");
  EXPECT_EQ(format_float(1234567.0, 7), "1234567");
  EXPECT_EQ(format_float(123456789.0, 7), "1.2e+08");
  EXPECT_EQ(format_float(0.0, 6), "  0.00");
  EXPECT_EQ(format_float(999.5, 6), "999.50");
  EXPECT_EQ(format_float(1234.4, 6), "1234.4");
  EXPECT_EQ(format_float(12345.4, 6), " 12345");
  EXPECT_EQ(format_float(123456.0, 6), "123456");
  EXPECT_EQ(format_float(1234567.0, 6), " 1e+06");
}

// nccl-tests prints an unchecked #wrong as "    N/A" (one column narrower than "%6g").
TEST(Table, UncheckedAndMissingPlacementsPrintNA) {
  ResultRow out = row(5.01, 0.0, 0.0, -1);
  out.size_bytes = 8;
  out.count = 2;
  EXPECT_EQ(format_row(&out, nullptr),
            "           8             2     float     sum      -1     5.01    0.00    0.00    N/A"
            "      N/A     N/A     N/A    N/A");
  ResultRow in = row(4.5, 0.01, 0.01, -1);
  out.wrong = 0;
  in.size_bytes = 8;
  in.count = 2;
  EXPECT_EQ(format_row(&out, &in),
            "           8             2     float     sum      -1     5.01    0.00    0.00       0"
            "     4.50    0.01    0.01    N/A");
}

// The three column-header lines as nccl-tests' writeResultHeader prints them, trailing spaces
// included (an empty timestamp column is "%*s" of width 0 after a space).
TEST(Table, ColumnHeaderIsByteIdenticalToNcclTests) {
  EXPECT_EQ(format_column_header(),
            "#                                                              out-of-place"
            "                       in-place          \n"
            "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
            "     time   algbw   busbw  #wrong \n"
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
            "             (us)  (GB/s)  (GB/s)         \n");
  const std::string ts = format_column_header(true);
  EXPECT_NE(ts.find("  #wrong           timestamp\n"), std::string::npos) << ts;
  EXPECT_NE(ts.find("(GB/s)           %Y-%m-%d %H:%M:%S\n"), std::string::npos) << ts;
}

// nccl-tests -I: the per-iteration header and i_min / i_max / i_p99 / i_cv% after each placement.
TEST(Table, PerIterationColumnsAsNcclTestsPrintsThem) {
  EXPECT_EQ(format_column_header(false, true),
            "#                                                                 out-of-place (+ "
            "per-iteration)                                in-place (+ per-iteration)\n"
            "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
            "    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    "
            "i_max    i_p99    i_cv% \n"
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
            "      (us)     (us)     (us)      (%)     (us)  (GB/s)  (GB/s)             (us)     "
            "(us)     (us)      (%) \n");
  ResultRow out = row(123.45, 271.82, 475.69, 0), in = row(120.11, 279.37, 488.89, -1);
  out.iter = compute_iter_stats({100, 120.5, 150.25});
  in.iter = compute_iter_stats({110, 110, 110, 140});
  EXPECT_EQ(format_row(&out, &in, true),
            "    33554432       8388608     float     sum      -1   123.45  271.82  475.69       0"
            "   100.00   150.25   150.25    16.69   120.11  279.37  488.89    N/A   110.00   "
            "140.00   140.00    11.06");
  TableHeader h;
  h.collective = "all_reduce";
  h.per_iter = true;
  EXPECT_NE(format_header(h).find("graph: 0 unalign: 0\n# Per-Iteration Report: host timing; i_* "
                                  "uses max over process rows \n#\n"),
            std::string::npos);
}

TEST(Table, WrongCountUsesPercentG) {
  ResultRow out = row(10, 1, 1, 1234567);
  EXPECT_NE(format_row(&out, nullptr).find(" 1.23457e+06"), std::string::npos);
}

TEST(Table, HeaderAndTrailerLines) {
  TableHeader h;
  h.collective = "all_reduce";
  h.min_bytes = 8;
  h.max_bytes = 134217728;
  h.world_size = 1;
  h.hosts = {"host1"};
  h.pids = {12345};
  const std::string s = format_header(h);
  EXPECT_EQ(s.substr(0, s.find('\n') + 1), "# Collective test starting: all_reduce_perf\n");
  EXPECT_NE(s.find("# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup "
                   "iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0\n#\n"
                   "# Using devices\n"),
            std::string::npos);
  EXPECT_EQ(s.find("# Blocking Enabled"), std::string::npos);
  h.blocking = true;
  EXPECT_NE(format_header(h).find("graph: 0 unalign: 0\n# Blocking Enabled: wait for completion "
                                  "and barrier after each collective \n#\n"),
            std::string::npos);
  EXPECT_NE(s.find("#  Rank  0 Group  0 Pid  12345 on      host1 device -1 [cpu]"),
            std::string::npos);
  EXPECT_TRUE(
      s.ends_with("#  Rank  0 Group  0 Pid  12345 on      host1 device -1 [cpu] host "
                  "memory\n#\n" +
                  format_column_header()))
      << s;
  Summary sum;
  sum.avg_busbw_gbps = 482.29;
  const std::string t = format_trailer("all_reduce", sum);
  EXPECT_EQ(t.substr(0, t.find("# Peak")),
            "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 482.29 \n");
  EXPECT_NE(t.find("#\n# Collective test concluded: all_reduce_perf\n"), std::string::npos);
}

TEST(Table, StragglerLineNamesTheSlowRank) {
  std::vector<ResultRow> rows(3, row(10, 1, 1, 0));
  for (auto& r : rows) r.rank_time_us = {10, 10, 14, 10};
  Summary s = summarize(rows, 4);
  ASSERT_EQ(s.stragglers, std::vector<int>{2});
  EXPECT_NE(format_straggler_line(rows, s).find("rank 2"), std::string::npos);
  for (auto& r : rows) r.rank_time_us = {10, 10, 11, 10};  // 10 % is within noise
  EXPECT_TRUE(summarize(rows, 4).stragglers.empty());
}

TEST(Table, SummaryIsNotDilutedBySmallSizes) {
  std::vector<ResultRow> rows = {row(1, 0.1, 0.1, 0), row(1, 0.1, 0.1, 0), row(1, 50, 80, 0)};
  rows[0].size_bytes = 8;
  rows[1].size_bytes = 8;
  const Summary s = summarize(rows, 2);
  EXPECT_NEAR(s.avg_busbw_gbps, (0.1 + 0.1 + 80) / 3, 1e-9);
  EXPECT_DOUBLE_EQ(s.peak_busbw_gbps, 80);
  EXPECT_DOUBLE_EQ(s.largest_size_busbw_gbps, 80);
  EXPECT_EQ(s.largest_size_bytes, 33554432);
}

// 200k rows, every out-of-place row before every in-place one (the worst order for pairing):
// the old scan over later rows took O(n^2) and did not finish in 60 s.
TEST(Table, RenderOf200kRowsIsNotQuadratic) {
  LoadedRun run;
  run.label = run.path = "big";
  run.result.meta.world_size = 2;
  constexpr int kSizes = 100000;
  for (const char* placement : {"out", "in"}) {
    for (int i = 0; i < kSizes; ++i) {
      ResultRow r = row(placement[0] == 'o' ? 10 : 20, 1, 1, 0);
      r.size_bytes = 4 * (i + 1);
      r.count = i + 1;
      r.placement = placement;
      run.result.rows.push_back(r);
    }
  }
  const std::vector<LoadedRun> runs = {std::move(run)};
  const auto t0 = std::chrono::steady_clock::now();
  const std::string table = render_table(runs);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 10.0);  // measured 2.4 s with the 2-core host at load 13; O(n^2) took minutes
  std::printf("render_table, %d rows: %.2f s\n", 2 * kSizes, s);
  // One line per size with both placements side by side.
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), kSizes + 13)
      << table.substr(table.size() - 600);
  EXPECT_NE(table.find("\n           4             1     float     sum      -1    10.00"),
            std::string::npos)
      << table.substr(0, 1500);
}

}  // namespace
}  // namespace collie::reports
