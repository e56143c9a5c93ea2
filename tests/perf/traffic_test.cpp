// The alltoallv traffic (perf/traffic.h) against nccl-tests' alltoallv_perf numbers, worked out by
// hand from its documented formula (src/alltoallv.cu, 2.19): per-peer bytes, the table's count
// and size columns, algbw/busbw; the matrix file's rules and refusals; nccl-tests' variables; and
// the seeded generators (repeatable, shaped as they say, every rank's view consistent).
#include "perf/traffic.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "core/env.h"
#include "core/error.h"
#include "perf/collective.h"
#include "perf/combine.h"
#include "support/refusal.h"

namespace collie::perf {
namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("collie_traffic_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

TrafficSpec spread(double s) {
  TrafficSpec t;
  t.spread = s;
  return t;
}

using testing::refusal;

TEST(Traffic, SpreadIsNcclTestsDistanceWeightedPattern) {
  // 4 ranks, 1024 bytes per rank: uniform 256 each; distance-weighted d x 1024 / 6 = 0, 170.7,
  // 341.3, 512, each cut to a multiple of 16.
  const TrafficModel full(spread(1), 4);
  EXPECT_EQ(full.bytes(0, 0, 1024), 0);
  EXPECT_EQ(full.bytes(0, 1, 1024), 160);
  EXPECT_EQ(full.bytes(0, 2, 1024), 336);
  EXPECT_EQ(full.bytes(0, 3, 1024), 512);
  EXPECT_EQ(full.bytes(3, 0, 1024), 160);  // distance (0 - 3) mod 4 = 1
  const TrafficModel flat(spread(0), 4);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(flat.bytes(1, j, 1024), 256);
  // Half way: 128 + d x 85.33: 128, 213.3, 298.7, 384.
  const TrafficModel half(spread(0.5), 4);
  EXPECT_EQ(half.bytes(0, 1, 1024), 208);
  EXPECT_EQ(half.bytes(0, 2, 1024), 288);
  EXPECT_EQ(half.bytes(0, 3, 1024), 384);
  // One rank sends itself everything, cut to 16 bytes.
  EXPECT_EQ(TrafficModel(spread(1), 1).bytes(0, 0, 1000), 992);
}

TEST(Traffic, AlltoallvColumnsAndBandwidthAreNcclTests) {
  const CollectiveDescriptor* d = find_collective("alltoallv");
  ASSERT_NE(d, nullptr);
  ASSERT_NE(d->traffic_layout, nullptr);
  // -b 1K, float, 4 ranks: count = (256 / 4) rounded down to 16 bytes = 64 per peer; the size
  // column is the busiest rank's bytes: 0 + 160 + 336 + 512 = 1008.
  const TrafficModel t(spread(1), 4);
  const Layout l = d->traffic_layout(1024 / 4, DType::Float32, 4, 2, t);
  EXPECT_EQ(l.count, 64u);
  EXPECT_EQ(l.send_count * 4, 1008u);
  EXPECT_EQ(l.recv_count * 4, 1008u);
  // int8: the per-peer count keeps 16-byte multiples (elements of 1 byte).
  EXPECT_EQ(d->traffic_layout(1000, DType::Int8, 4, 0, t).count, 240u);
  // algbw = the busiest rank's bytes / time; busbw = algbw x (n-1)/n (nccl-tests' GetBw).
  PerfOptions o;
  RowContext ctx;
  ctx.desc = d;
  ctx.layout = l;
  ctx.iters = 1;
  std::vector<double> gathered;
  for (int r = 0; r < 4; ++r) {
    LocalResult lr;
    lr.avg_us = 10;
    lr.iter_us = {10};
    const auto p = pack_local(lr, 0);
    gathered.insert(gathered.end(), p.begin(), p.end());
  }
  const auto row = combine_ranks(ctx, o, gathered, 4).row;
  EXPECT_EQ(row.size_bytes, 1008);
  EXPECT_EQ(row.count, 64);
  EXPECT_DOUBLE_EQ(row.algbw_gbps, 1008 / 1e9 / 10e-6);
  EXPECT_DOUBLE_EQ(row.busbw_gbps, row.algbw_gbps * 3 / 4);
}

TEST(Traffic, EveryRanksSplitsAgreeWithEveryOthers) {
  TrafficSpec z;
  z.kind = TrafficKind::Zipf;
  z.zipf_s = 1.5;
  for (const TrafficSpec& s : {spread(0.3), z}) {
    const int n = 5;
    const TrafficModel t(s, n);
    std::vector<std::shared_ptr<const RankTraffic>> r;
    for (int k = 0; k < n; ++k) r.push_back(t.for_rank(k, 40000, DType::Float16));
    for (int i = 0; i < n; ++i) {
      int64_t before = 0;
      for (int j = 0; j < n; ++j) {
        EXPECT_EQ(r[i]->send_splits[j], r[j]->recv_splits[i]) << i << "->" << j;
        EXPECT_EQ(r[i]->send_splits[j] * 2, t.bytes(i, j, 40000));
        EXPECT_EQ(r[j]->recv_offsets[i], before) << i << "->" << j;
        before += r[i]->send_splits[j];
      }
      EXPECT_EQ(r[0]->send_bytes[i], r[i]->send_total() * 2);
      EXPECT_EQ(r[0]->recv_bytes[i], r[i]->recv_total() * 2);
    }
    EXPECT_EQ(r[3]->max_send * 2,
              *std::max_element(r[0]->send_bytes.begin(), r[0]->send_bytes.end()));
  }
}

TEST(Traffic, MatrixFileIsReadScaledAndCutToSixteenBytes) {
  const std::string path = write_file("m.txt", "100  200 150\n\n50\t100 75\n300 150 200\n");
  TrafficSpec s = parse_traffic("file:" + path, 1, 1.5);
  EXPECT_EQ(s.matrix_dim, 3);
  // x 1.5, cut to 16 bytes: 150 -> 144, 300 -> 288, 225 -> 224, 75 -> 64, 112.5 -> 112, ...
  EXPECT_EQ(s.matrix_bytes, (std::vector<int64_t>{144, 288, 224, 64, 144, 112, 448, 224, 288}));
  const TrafficModel two(s, 2);  // the first 2 rows and columns of a 3x3 matrix
  EXPECT_EQ(two.bytes(1, 0, 999), 64);
  EXPECT_EQ(two.max_rank_bytes(0), 432);  // rank 1 receives 288 + 144
  const CollectiveDescriptor* d = find_collective("alltoallv");
  const Layout l = d->traffic_layout(77, DType::Float32, 2, 0, two);
  EXPECT_EQ(l.count, 0u);  // nccl-tests' count column is 0 in matrix mode
  EXPECT_EQ(l.send_count * 4, 432u);
  EXPECT_EQ(l.recv_count * 4, 432u);
  EXPECT_NE(refusal([&] { TrafficModel(s, 4); }).find("3x3: too small for 4 ranks"),
            std::string::npos);
}

TEST(Traffic, BadMatrixFilesAreRefusedNamingTheCell) {
  struct Case {
    std::string text, says;
  };
  const std::vector<Case> cases = {
      {"1 2\n3\n", "row 2 has 1 values, row 1 has 2"},
      {"1 2\n3 4\n5 6\n", "3 rows of 2 values, not square"},
      {"1 -2\n3 4\n", "row 1 column 2"},
      {"1 nan\n3 4\n", "row 1 column 2"},
      {"0x10 1\n3 4\n", "row 1 column 1"},
      {"1 2\n3 4e300\n", "row 2 column 2"},
      {"\n  \n", "no values"},
  };
  for (const Case& c : cases) {
    const std::string path = write_file("bad.txt", c.text);
    const std::string msg = refusal([&] { parse_traffic("file:" + path, 1, 1); });
    EXPECT_NE(msg.find(c.says), std::string::npos) << c.text << " -> " << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
  }
  EXPECT_NE(refusal([] { parse_traffic("file:/nonexistent/m.txt", 1, 1); }).find("cannot open"),
            std::string::npos);
  EXPECT_NE(refusal([] { parse_traffic("file:/tmp", 1, 1); }).find("is a directory"),
            std::string::npos);
  // A FIFO is refused without waiting for a writer, /dev/zero without reading it.
  const std::string fifo = ::testing::TempDir() + "traffic_matrix_fifo";
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(refusal([&] { parse_traffic("file:" + fifo, 1, 1); }).find("is a FIFO"),
            std::string::npos);
  std::filesystem::remove(fifo);
  EXPECT_NE(refusal([] { parse_traffic("file:/dev/zero", 1, 1); }).find("character device"),
            std::string::npos);
  // Larger than a matrix file may be: refused before it is read.
  const std::string big = write_file("big.txt", "");
  std::filesystem::resize_file(big, kMaxMatrixFileBytes + 1);
  EXPECT_NE(refusal([&] { parse_traffic("file:" + big, 1, 1); }).find("more than the"),
            std::string::npos);
  // One bad token of 6 MB is quoted in at most ~80 characters, its length said.
  const std::string token =
      write_file("token.txt", "1 " + std::string(6'000'000, '9') + "x\n3 4\n");
  const std::string msg = refusal([&] { parse_traffic("file:" + token, 1, 1); });
  EXPECT_LT(msg.size(), 300u) << msg.substr(0, 300);
  EXPECT_NE(msg.find("...' (6000001 bytes)"), std::string::npos) << msg.substr(0, 300);
}

TEST(Traffic, FlagWordsAndNcclTestsVariables) {
  EXPECT_EQ(parse_traffic("spread:0.25", 1, 1).spread, 0.25);
  EXPECT_EQ(parse_traffic("zipf:1.2", 1, 1).zipf_s, 1.2);
  const TrafficSpec hot = parse_traffic("hot:3:0.8", 9, 1);
  EXPECT_EQ(hot.hot_ranks, 3);
  EXPECT_EQ(hot.hot_share, 0.8);
  EXPECT_EQ(hot.repeat_flags(), "--traffic hot:3:0.8 --traffic-seed 9");
  for (const char* bad : {"zipf:-1", "spread:2", "hot:0", "hot", "uniform:3", "file:", "poisson"})
    EXPECT_NE(refusal([&] { parse_traffic(bad, 1, 1); }).find("--traffic"), std::string::npos)
        << bad;
  // nccl-tests' variables: the matrix file before the spread, spread 1 when neither.
  EXPECT_EQ(traffic_from_env(MapEnv(MapEnv::Map{})).spread, 1.0);
  const TrafficSpec s =
      traffic_from_env(MapEnv(MapEnv::Map{{"NCCL_TESTS_ALLTOALLV_SPREAD", "0.5"}}));
  EXPECT_EQ(s.kind, TrafficKind::Spread);
  EXPECT_EQ(s.spread, 0.5);
  EXPECT_EQ(s.source, "NCCL_TESTS_ALLTOALLV_SPREAD");
  const std::string path = write_file("env.txt", "32 32\n32 32\n");
  const TrafficSpec m =
      traffic_from_env(MapEnv(MapEnv::Map{{"NCCL_TESTS_ALLTOALLV_SPREAD", "0.5"},
                                          {"NCCL_TESTS_ALLTOALLV_MATRIX_FILE", path},
                                          {"NCCL_TESTS_ALLTOALLV_MATRIX_SCALE", "2"}}));
  EXPECT_EQ(m.kind, TrafficKind::Matrix);
  EXPECT_EQ(m.matrix_bytes, (std::vector<int64_t>{64, 64, 64, 64}));
  // Where nccl-tests would ignore or clamp a value, collie names the variable.
  EXPECT_NE(refusal([] {
              traffic_from_env(MapEnv(MapEnv::Map{{"NCCL_TESTS_ALLTOALLV_SPREAD", "1.5"}}));
            }).find("NCCL_TESTS_ALLTOALLV_SPREAD"),
            std::string::npos);
  EXPECT_NE(refusal([&] {
              traffic_from_env(MapEnv(MapEnv::Map{{"NCCL_TESTS_ALLTOALLV_MATRIX_FILE", path},
                                                  {"NCCL_TESTS_ALLTOALLV_MATRIX_SCALE", "x"}}));
            }).find("NCCL_TESTS_ALLTOALLV_MATRIX_SCALE"),
            std::string::npos);
}

// The generators' bytes for a total of 1 MiB per rank on n ranks, row by row.
std::vector<std::vector<int64_t>> matrix(const TrafficSpec& s, int n) {
  const TrafficModel t(s, n);
  std::vector<std::vector<int64_t>> m(n, std::vector<int64_t>(n));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) m[i][j] = t.bytes(i, j, 1 << 20);
  return m;
}

int64_t column(const std::vector<std::vector<int64_t>>& m, int j) {
  int64_t c = 0;
  for (const auto& row : m) c += row[j];
  return c;
}

TEST(Traffic, GeneratorsAreSeededAndShapedAsTheySay) {
  const int n = 8;
  const int64_t total = 1 << 20;
  for (const char* word : {"uniform", "zipf:1.1", "hot:2:0.75"}) {
    const auto a = matrix(parse_traffic(word, 7, 1), n);
    EXPECT_EQ(a, matrix(parse_traffic(word, 7, 1), n)) << word << ": same seed, same bytes";
    EXPECT_NE(a, matrix(parse_traffic(word, 8, 1), n)) << word << ": another seed";
    for (int i = 0; i < n; ++i) {
      const int64_t sent = std::accumulate(a[i].begin(), a[i].end(), int64_t{0});
      // Every rank sends its total, less at most 16 bytes per peer of rounding.
      EXPECT_LE(sent, total) << word;
      EXPECT_GT(sent, total - 16 * n) << word;
      for (int64_t b : a[i]) EXPECT_EQ(b % 16, 0) << word;
    }
  }
  // uniform: every rank receives about total (8192 tokens: a few percent of noise).
  const auto u = matrix(parse_traffic("uniform", 3, 1), n);
  for (int j = 0; j < n; ++j) EXPECT_NEAR(column(u, j), total, 0.1 * total) << j;
  // zipf:2: the most popular rank receives about 1/H(8, 2) = 65 % of everything.
  const auto z = matrix(parse_traffic("zipf:2", 3, 1), n);
  int64_t top = 0;
  for (int j = 0; j < n; ++j) top = std::max(top, column(z, j));
  double h = 0;
  for (int k = 1; k <= n; ++k) h += 1.0 / (k * k);
  EXPECT_NEAR(static_cast<double>(top) / (n * total), 1 / h, 0.03);
  // hot:2:0.75: two ranks receive 3/8 of everything each, the six others 1/24.
  const auto hot = matrix(parse_traffic("hot:2:0.75", 3, 1), n);
  int hot_ranks = 0;
  for (int j = 0; j < n; ++j) {
    const double share = static_cast<double>(column(hot, j)) / (n * total);
    if (share > 0.3) {
      ++hot_ranks;
      EXPECT_NEAR(share, 0.375, 0.03) << j;
    } else {
      EXPECT_NEAR(share, 0.25 / 6, 0.015) << j;
    }
  }
  EXPECT_EQ(hot_ranks, 2);
  EXPECT_NE(refusal([] { TrafficModel(parse_traffic("hot:9", 1, 1), 8); }).find("hot:9"),
            std::string::npos);
}

TEST(Traffic, DescribedTrafficGivesTheSameBytesAgain) {
  const std::string path = write_file("again.txt", "16 32\n48 64\n");
  for (const TrafficSpec& s :
       {parse_traffic("zipf:0.8", 42, 1), parse_traffic("hot:1", 5, 1),
        parse_traffic("spread:0.1", 1, 1), spread(1), parse_traffic("file:" + path, 1, 2)}) {
    // repeat_flags() is "--traffic WORD [--traffic-seed N | --traffic-scale X]".
    std::istringstream flags(s.repeat_flags());
    std::string flag, word, extra, value;
    flags >> flag >> word >> extra >> value;
    const uint64_t seed = extra == "--traffic-seed" ? std::stoull(value) : 1;
    const double scale = extra == "--traffic-scale" ? std::stod(value) : 1;
    EXPECT_EQ(parse_traffic(word, seed, scale).fingerprint(), s.fingerprint()) << s.describe();
  }
  EXPECT_NE(parse_traffic("zipf:0.8", 1, 1).fingerprint(),
            parse_traffic("zipf:0.8", 2, 1).fingerprint());
  EXPECT_NE(spread(0.5).fingerprint(), spread(0.25).fingerprint());
}

TEST(Traffic, SummaryLinesAreNcclTests) {
  const TrafficModel t(spread(1), 4);
  const auto r = t.for_rank(0, 1024, DType::Float32);
  const auto lines = traffic_summary_lines(t.spec(), *r, 1024, 10.0);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0],
            "# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: mode=generated nranks=4 total_bytes=1024 "
            "spread=1.000 time_usec=10.00");
  EXPECT_EQ(lines[1], "#   rank=0 send_bytes=1008 recv_bytes=1008 alg_bw=0.10 bus_bw=0.08");
}

}  // namespace
}  // namespace collie::perf
