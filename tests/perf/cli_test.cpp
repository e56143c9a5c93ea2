// `collie perf` as a user runs it: the real binary, real local ranks over Gloo on loopback.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "comm/registry.h"
#include "perf/collective.h"
#include "reports/json_io.h"

namespace {

struct Result {
  int rc = -1;
  std::string out, err;
};

std::string tmp(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("collie_perf_cli_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result run(const std::string& args, const std::string& env = "") {
  const std::string out = tmp("out"), err = tmp("err");
  const std::string cmd = env + " " + COLLIE_BIN + " perf " + args + " >" + out + " 2>" + err;
  Result r;
  const int st = std::system(cmd.c_str());
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

// Table rows: lines that do not start with '#'.
std::vector<std::vector<std::string>> rows(const std::string& out) {
  std::vector<std::vector<std::string>> v;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::vector<std::string> cells;
    std::string c;
    while (ls >> c) cells.push_back(c);
    v.push_back(cells);
  }
  return v;
}

class PerfCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(collie::find_backend("gloo"), nullptr)
        << "gloo is a required backend (cmake/Dependencies.cmake) but is not registered";
  }
};

TEST_F(PerfCli, EveryCollectiveValidatesOverGlooOn2To4Ranks) {
  const std::vector<std::string> variants = {"-d float -o all", "-d int32 -o prod",
                                             "-d bfloat16 -o sum", "-d double -o avg"};
  for (int np = 2; np <= 4; ++np) {
    for (const auto& v : variants) {
      const Result r = run("all -np " + std::to_string(np) + " -b 8 -e 4K -f 8 -n 2 -w 1 -c 1 " +
                           "-r " + std::to_string(np - 1) + " -T 60 " + v);
      ASSERT_EQ(r.rc, 0) << v << " np " << np << "\n" << r.out << r.err;
      const auto t = rows(r.out);
      ASSERT_GE(t.size(), collie::perf::all_collectives().size()) << r.out;
      for (const auto& row : t) {
        ASSERT_EQ(row.size(), 13u);
        for (size_t cell : {8u, 12u}) {
          if (row[cell] != "N/A") {
            EXPECT_EQ(row[cell], "0") << v << " np " << np;
          }
        }
      }
      for (const collie::perf::CollectiveDescriptor* c : collie::perf::all_collectives()) {
        EXPECT_NE(r.out.find("# Collective test concluded: " + c->name + "_perf"),
                  std::string::npos)
            << c->name;
      }
    }
  }
}

TEST_F(PerfCli, AlltoallvTrafficRunsCleanUnderDetail) {
  // DETAIL checks every all_to_all's splits pairwise; uneven traffic (ranks with different
  // totals, zeros) is not a desync, and a corrupted element is still counted.
  const std::string matrix = tmp("matrix.txt");
  std::ofstream(matrix) << "0 0 4096\n16 0 0\n48 32 0\n";
  for (const std::string& traffic :
       {std::string("--traffic zipf:1.5 --traffic-seed 3 -b 1K -e 64K -f 8"),
        "--traffic file:" + matrix}) {
    const Result r = run("alltoallv -np 3 -n 2 -w 1 -T 60 " + traffic, "COLLIE_DEBUG=DETAIL");
    ASSERT_EQ(r.rc, 0) << traffic << "\n" << r.out << r.err;
    const auto t = rows(r.out);
    ASSERT_FALSE(t.empty()) << r.out;
    for (const auto& row : t) EXPECT_EQ(row[8], "0") << traffic;
    EXPECT_NE(r.out.find("# alltoallv traffic: "), std::string::npos) << r.out;
  }
  const Result bad = run("alltoallv -np 3 -n 2 -w 1 -T 60 --traffic file:" + matrix,
                         "COLLIE_ENABLE_TEST_HOOKS=1 COLLIE_PERF_TEST_CORRUPT=0:3");
  EXPECT_EQ(bad.rc, 1) << bad.out << bad.err;
  const auto t = rows(bad.out);
  ASSERT_EQ(t.size(), 1u) << bad.out;
  EXPECT_EQ(t[0][8], "1");
  std::filesystem::remove(matrix);
}

TEST_F(PerfCli, CorruptedResultIsCountedAndFailsTheRun) {
  const std::string json = tmp("corrupt.json");
  const Result r = run("all_reduce -np 2 -b 64 -e 64 -n 2 -J " + json,
                       "COLLIE_ENABLE_TEST_HOOKS=1 COLLIE_PERF_TEST_CORRUPT=1:5");
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  const auto t = rows(r.out);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0][8], "1");
  EXPECT_EQ(t[0][12], "1");
  EXPECT_NE(r.out.find("# Out of bounds values : 2 FAILED"), std::string::npos) << r.out;
  const auto res = collie::reports::read_results(json);
  ASSERT_EQ(res.rows.size(), 2u);
  EXPECT_EQ(res.rows[0].wrong_rank, 1);
  EXPECT_EQ(res.rows[0].wrong_offset, 5);
  std::filesystem::remove(json);
}

TEST(PerfCliFlags, TestHooksAreRefusedWithoutTheTestSwitch) {
  // A stray hook in a user's environment must not skew a real run: one line naming it, exit 2,
  // no table.
  for (const char* env : {"COLLIE_PERF_TEST_DELAY_US=20000", "COLLIE_PERF_TEST_CORRUPT=1:5",
                          "COLLIE_PERF_TEST_STALL=1:/tmp/x",
                          "COLLIE_ENABLE_TEST_HOOKS=yes COLLIE_PERF_TEST_DELAY_US=1"}) {
    const Result r = run("all_reduce -np 2 -b 8 -e 8 -n 2", env);
    EXPECT_EQ(r.rc, 2) << env << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << env << ": " << r.err;
    EXPECT_NE(r.err.find("COLLIE_ENABLE_TEST_HOOKS=1"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << env << ": " << r.out;
  }
}

TEST_F(PerfCli, ActiveTestHooksAreAnnouncedAndRecorded) {
  const std::string json = tmp("hooks.json");
  const Result r = run("all_reduce -np 2 -b 8 -e 8 -n 2 -J " + json,
                       "COLLIE_ENABLE_TEST_HOOKS=1 COLLIE_PERF_TEST_DELAY_US=1:1000");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  const std::string warning =
      "WARNING: test hooks active (COLLIE_PERF_TEST_DELAY_US=1:1000): these results are not a "
      "measurement";
  EXPECT_NE(r.err.find("collie perf: " + warning), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("# " + warning), std::string::npos) << r.out;
  const auto res = collie::reports::read_results(json);
  EXPECT_EQ(res.meta.test_hooks, std::vector<std::string>{"COLLIE_PERF_TEST_DELAY_US=1:1000"});
  // Without hooks nothing is recorded or announced.
  const Result plain = run("all_reduce -np 2 -b 8 -e 8 -n 2 -J " + json);
  EXPECT_EQ(plain.rc, 0) << plain.err;
  EXPECT_EQ(plain.err.find("test hooks"), std::string::npos) << plain.err;
  EXPECT_TRUE(collie::reports::read_results(json).meta.test_hooks.empty());
  std::filesystem::remove(json);
}

TEST(PerfCliFlags, BadFlagsPrintOneLineAndExit2) {
  for (const char* args : {"-b 2M -e 1M", "-d float17", "-np 0", "all_scatter", "-o mean", "-G 1",
                           "--placement sideways", "-a 7", "-f 0", "-f 1 -i 0", "-b 8KBB",
                           "--backend foo -G 1", "-T -1", "--debug-port 70000"}) {
    const Result r = run(args);
    EXPECT_EQ(r.rc, 2) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
  }
}

// The messages of the sweep's rules and of the launch flags, the same for probe and accept
// (issue 19: one validator each).
TEST(PerfCliFlags, SweepAndLaunchFlagMessages) {
  struct Case {
    const char* args;
    const char* err;
  } cases[] = {
      {"-f 0", "collie perf: error: -f must be >= 1 (above 1 multiplies each size; 1 adds -i)\n"},
      {"-f 1 -i 0", "collie perf: error: -i must be > 0 when -f is 1\n"},
      {"-b 2MiB -e 1M", "collie perf: error: -b 2M is larger than -e 1M\n"},
      {"-e 64KBB", "collie perf: error: -e '64KBB' is not a size (use e.g. 8, 64K, 4M, 1G)\n"},
      {"-np 0", "collie perf: error: -np must be in 1..4096\n"},
      {"--backend foo -G 1", "collie perf: error: --backend must be gloo, mpi or nccl\n"},
      {"-T -1",
       "collie perf: error: -T '-1' is not a timeout: give seconds (30, 0.5) or a duration "
       "(30s, 500ms, 5m); 0 = the default\n"},
  };
  for (const Case& c : cases) {
    const Result r = run(c.args);
    EXPECT_EQ(r.rc, 2) << c.args;
    EXPECT_EQ(r.err, c.err) << c.args;
  }
}

// -f 1 is nccl-tests' "no factor": sizes -i apart (the accept spec's step_factor 1 likewise).
TEST_F(PerfCli, StepFactorOneAddsStepBytes) {
  const Result r = run("all_reduce -np 1 -b 8B -e 32 -f 1 -i 8 -n 1 -w 0");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<std::string> sizes;
  for (const auto& row : rows(r.out)) sizes.push_back(row.at(0));
  EXPECT_EQ(sizes, (std::vector<std::string>{"8", "16", "24", "32"})) << r.out;
}

// COLLIE_INIT_METHOD says where ranks meet, not how many there are: without a launcher, perf
// (and probe and accept, the same code) still starts -np local ranks, which meet through it.
TEST_F(PerfCli, InitMethodAloneStillStartsLocalRanks) {
  const std::string store = tmp("init_method.store"), json = tmp("init_method.json");
  std::filesystem::remove(store);
  const Result r =
      run("all_reduce -np 2 -b 8 -e 8 -n 1 -J " + json, "COLLIE_INIT_METHOD=file://" + store);
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(collie::reports::read_results(json).meta.world_size, 2);
  for (const auto& p : {store, json}) std::filesystem::remove(p);
}

TEST(PerfCliDevice, GraphsWithAHostBackendAreOneLine) {
  for (const char* backend : {"gloo", "mpi"}) {
    const Result r = run(std::string("-G 1 -np 1 --backend ") + backend);
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_EQ(r.err, std::string("collie perf: error: -G needs a CUDA backend (--backend nccl); ") +
                         backend + " runs on the host\n");
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

// On a host without a usable GPU (this CI), `--backend nccl` is one line naming what is missing
// (the driver, or a visible device), exit 2, before any rank starts.
TEST(PerfCliDevice, NcclWithoutAGpuIsOneLineAndExit2) {
  const collie::BackendRegistration* reg = collie::find_backend("nccl");
  if (reg == nullptr) {  // a build without CUDA: one line too, nothing launched
    const Result r = run("--backend nccl -np 1 -b 8 -e 8");
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_EQ(r.err.rfind("collie perf: error: backend 'nccl' is not available in this build: ", 0),
              0u)
        << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    return;
  }
  ASSERT_TRUE(reg->unavailable_reason);
  const std::string why = reg->unavailable_reason();
  if (why.empty()) GTEST_SKIP() << "a CUDA device is present; this case needs a host without";
  const Result r = run("--backend nccl -np 1 -b 8 -e 8");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_EQ(r.err, "collie perf: error: " + why + "\n");
  EXPECT_TRUE(why.rfind("no CUDA driver", 0) == 0 || why.rfind("no visible CUDA device", 0) == 0 ||
              why.rfind("CUDA driver ", 0) == 0)
      << why;
  EXPECT_EQ(r.err.find("cudaError"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  // Under a launcher (env:// variables set) each rank checks the same before its rendezvous.
  const Result ranked = run("--backend nccl -b 8 -e 8",
                            "RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 "
                            "MASTER_PORT=0");
  EXPECT_EQ(ranked.rc, 2) << ranked.err;
  EXPECT_EQ(ranked.err, r.err);
}

TEST_F(PerfCli, JsonCsvAndJsonlAgreeWithTheTable) {
  const std::string json = tmp("r.json"), csv = tmp("r.csv"), jsonl = tmp("r.jsonl");
  const Result r = run("all_reduce all_gather -np 3 -b 1K -e 16K -f 4 -n 3 -J " + json + " --csv " +
                       csv + " --jsonl " + jsonl);
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto table = rows(r.out);
  const auto res = collie::reports::read_results(json);
  ASSERT_TRUE(res.summary.has_value());
  EXPECT_EQ(res.meta.world_size, 3);
  EXPECT_EQ(res.meta.backend, "gloo");
  EXPECT_EQ(res.meta.hosts.size(), 3u);
  EXPECT_EQ(res.meta.flags.at("--output_file"), json);
  ASSERT_EQ(res.rows.size(), table.size() * 2);  // out + in per table line
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(std::to_string(res.rows[2 * i].size_bytes), table[i][0]);
    EXPECT_EQ(res.rows[2 * i].rank_time_us.size(), 3u);
    EXPECT_EQ(res.rows[2 * i].iter.samples, 3);
  }
  std::ifstream jl(jsonl);
  std::string line;
  size_t n = 0;
  while (std::getline(jl, line)) {
    const auto row = collie::reports::row_from_json(nlohmann::json::parse(line));
    EXPECT_DOUBLE_EQ(row.busbw_gbps, res.rows[n].busbw_gbps);
    ++n;
  }
  EXPECT_EQ(n, res.rows.size());
  std::ifstream c(csv);
  n = 0;
  while (std::getline(c, line)) ++n;
  EXPECT_EQ(n, res.rows.size() + 1);  // + header
  for (const auto& p : {json, csv, jsonl}) std::filesystem::remove(p);
}

// Issue 27: -J's environment snapshot left out *SECRET* and *TOKEN* but kept *PASSWORD*, which
// the debug server hides; both now follow core/env_snapshot.h.
TEST_F(PerfCli, NoCredentialReachesTheResultsFile) {
  const std::string json = tmp("env.json");
  const Result r = run("all_reduce -np 2 -b 8 -e 8 -n 1 -J " + json,
                       "COLLIE_DB_PASSWORD=hunter2 NCCL_IB_PASSWD=hunter3 COLLIE_X_Token=hunter4 "
                       "COLLIE_STORE_SECRET=hunter5 COLLIE_NOT_HIDDEN=visible");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string text = slurp(json);
  for (const char* s : {"hunter2", "hunter3", "hunter4", "hunter5"}) {
    EXPECT_EQ(text.find(s), std::string::npos) << s << " is in " << json;
  }
  EXPECT_NE(text.find("COLLIE_NOT_HIDDEN=visible"), std::string::npos);  // the snapshot is there
  std::filesystem::remove(json);
}

TEST_F(PerfCli, MinBusBandwidthGateFailsTheRun) {
  const Result r = run("all_reduce -np 2 -b 1K -e 1K -n 2 --min-busbw 1000000");
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("below 0.9 x"), std::string::npos) << r.err;
  EXPECT_EQ(run("all_reduce -np 2 -b 1K -e 1K -n 2", "NCCL_TESTS_MIN_BW=1000000").rc, 1);
}

// nccl-tests reads NCCL_TESTS_MIN_BW with strtod, so "abc" turned its gate off and "5GB/s" read
// as 5; collie refuses what is not a number, in one line, before any rank starts.
TEST(PerfCliFlags, ABadMinBandwidthVariableIsRefused) {
  for (const char* v : {"abc", "5GB/s", "-1", "nan"}) {
    const Result r =
        run("all_reduce -np 2 -b 1K -e 1K -n 2", std::string("NCCL_TESTS_MIN_BW=") + v);
    EXPECT_EQ(r.rc, 2) << v << ": " << r.err;
    EXPECT_EQ(
        r.err.rfind(
            std::string("collie perf: error: NCCL_TESTS_MIN_BW '") + v + "' is not a number", 0),
        0u)
        << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST_F(PerfCli, TimeoutNamesTheLaggingRankAndExits3) {
  // Rank 1 sleeps 4 s before its first timed call; -T 1 must end the run and name rank 1.
  const Result r = run("all_reduce -np 2 -b 8 -e 8 -n 2 -T 1",
                       "COLLIE_ENABLE_TEST_HOOKS=1 COLLIE_PERF_TEST_DELAY_US=1:4000000");
  EXPECT_EQ(r.rc, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("rank 1"), std::string::npos) << r.err;
}

}  // namespace
