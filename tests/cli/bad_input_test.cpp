// Every number from flags and specs is validated (finite, in range), YAML/JSON specs are
// bounded (alias expansion, depth, size), -np is capped and output paths are checked before any
// rank starts: each bad input is one line on stderr and exit 2 from the real `collie` binary,
// quickly (issue 17).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include "cli/cli_run.h"
#include "comm/registry.h"

namespace collie {
namespace {

namespace fs = std::filesystem;
using testing::ChildProcess;

using testing::CliRun;

// `prefix` runs the binary through another command (setpriv, to drop root).
CliRun collie(const std::vector<std::string>& args, const std::vector<std::string>& prefix = {},
              const std::map<std::string, std::string>& env = {}) {
  return testing::run_collie(args, env, std::chrono::seconds(30), prefix);
}

// Exit 2 with exactly one line on stderr containing `words`, nothing on stdout (no rank ran:
// rank 0 prints the report header first), within a few seconds.
void expect_usage(const std::vector<std::string>& args, const std::string& words,
                  const std::vector<std::string>& prefix = {},
                  const std::map<std::string, std::string>& env = {}) {
  std::string cmd;
  for (const auto& [k, v] : env) cmd += k + "=" + v + " ";
  for (const auto& a : prefix) cmd += a + " ";
  for (const auto& a : args) cmd += a + " ";
  const CliRun r = collie(args, prefix, env);
  EXPECT_EQ(r.code, 2) << cmd << "\n" << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << cmd << "\n" << r.err;
  EXPECT_NE(r.err.find(words), std::string::npos) << cmd << "\n" << r.err;
  EXPECT_EQ(r.out, "") << cmd;
  EXPECT_LT(r.seconds, 10) << cmd;
}

struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("collie_c17a_cli") {}
};

// Issue 27: COLLIE_FR_BUFFER_SIZE=4000000000 ended every rank in "internal error:
// std::bad_alloc". A number that sizes something is refused by name, before any rank starts.
TEST(CliBadInput, EnvironmentSizesAreCheckedByName) {
  for (const char* v : {"4000000000", "-1", "4e9"}) {
    const auto t0 = std::chrono::steady_clock::now();
    ChildProcess p({COLLIE_BIN, "perf", "all_reduce", "-b", "8", "-e", "8", "-n", "1", "-np", "2"},
                   {{"COLLIE_FR_BUFFER_SIZE", v}});
    const auto st = p.wait(std::chrono::seconds(30));
    ASSERT_TRUE(st.has_value()) << v;
    const std::string err = p.err();
    EXPECT_EQ(*st, 2) << v << ": " << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << v << ": " << err;
    EXPECT_NE(err.find("COLLIE_FR_BUFFER_SIZE="), std::string::npos) << err;
    EXPECT_EQ(err.find("bad_alloc"), std::string::npos) << err;
    EXPECT_EQ(p.out(), "");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  }
}

TEST(CliBadInput, PerfSizesAndNumbers) {
  expect_usage({"perf", "-b", "1e30"}, "-b '1e30' is larger than 1099511627776 bytes");
  expect_usage({"perf", "-e", "1e30"}, "-e '1e30' is larger than");
  expect_usage({"perf", "-b", "nan"}, "-b 'nan' is not a size");
  expect_usage({"perf", "-b", "inf"}, "-b 'inf' is not a size");
  expect_usage({"perf", "-b", "-8"}, "-b '-8' is not a size");
  expect_usage({"perf", "-b", "0x10"}, "-b '0x10' is not a size");
  expect_usage({"perf", "-b", "4X"}, "-b '4X' is not a size");
  expect_usage({"perf", "--min-busbw", "nan"}, "--min-busbw nan is not a number");
  expect_usage({"perf", "-np", "100000"}, "-np must be in 1..4096");
}

TEST(CliBadInput, PerfAlltoallvTraffic) {
  TempDir t;
  expect_usage({"perf", "alltoallv", "--traffic", "poisson"},
               "--traffic 'poisson' is not spread[:S], uniform, zipf:S, hot:K[:F] or file:PATH");
  expect_usage({"perf", "alltoallv", "--traffic", "zipf:nan"}, "zipf:nan: S 'nan' is not a number");
  expect_usage({"perf", "alltoallv", "--traffic", "hot:0"}, "hot:0: K '0' is not an integer");
  expect_usage({"perf", "all_reduce", "--traffic", "uniform"}, "--traffic shapes alltoallv only");
  const std::string ragged = t.write("ragged.txt", "16 32\n48\n");
  expect_usage({"perf", "alltoallv", "--traffic", "file:" + ragged},
               "traffic matrix " + ragged + ": row 2 has 1 values, row 1 has 2");
  expect_usage({"perf", "alltoallv"}, "NCCL_TESTS_ALLTOALLV_SPREAD '2' is not a number in [0, 1]",
               {}, {{"NCCL_TESTS_ALLTOALLV_SPREAD", "2"}});
  expect_usage({"perf", "alltoallv"}, "traffic matrix: cannot open /nonexistent/m.txt", {},
               {{"NCCL_TESTS_ALLTOALLV_MATRIX_FILE", "/nonexistent/m.txt"}});
  // Issue 40: a negative --traffic-scale passed for "not given", and one given with
  // NCCL_TESTS_ALLTOALLV_MATRIX_FILE or a generated traffic was ignored.
  expect_usage({"perf", "alltoallv", "--traffic", "file:" + ragged, "--traffic-scale", "-2"},
               "--traffic-scale -2 is not a number in [0, 1000000000000]");
  expect_usage({"perf", "alltoallv", "--traffic", "zipf:1", "--traffic-scale", "2"},
               "--traffic-scale scales a matrix file (--traffic file:PATH or "
               "NCCL_TESTS_ALLTOALLV_MATRIX_FILE); this run's traffic is zipf:1");
  expect_usage({"perf", "alltoallv", "--traffic-scale", "2"}, "this run's traffic is spread:1");
  expect_usage({"perf", "all_reduce", "--traffic-scale", "2"},
               "--traffic-scale scales alltoallv's matrix");
  // One bad token of a matrix file is quoted in ~80 characters, however long it is.
  const std::string token = t.write("token.txt", "16 " + std::string(1 << 20, '7') + "x\n16 16\n");
  expect_usage({"perf", "alltoallv", "--traffic", "file:" + token},
               "...' (1048577 bytes) is not a number in [0, 1000000000000000]");
  EXPECT_LT(collie({"perf", "alltoallv", "--traffic", "file:" + token}).err.size(), 400u);
  // Read only when alltoallv runs: another collective ignores them, as nccl-tests' other
  // binaries do.
  const CliRun r = collie({"perf", "all_reduce", "-np", "1", "-b", "8", "-e", "8", "-n", "1"}, {},
                          {{"NCCL_TESTS_ALLTOALLV_MATRIX_FILE", "/nonexistent/m.txt"}});
  EXPECT_EQ(r.code, 0) << r.err;
}

// Issue 40: alltoallv runs that measure nothing ended with 0 rows, complete, exit 0. Every rank
// refuses before the collective's first row; and --traffic-scale scales a matrix given by
// nccl-tests' variable, as the docs say.
TEST(CliBadInput, AlltoallvThatMeasuresNothingIsRefusedAndTheScaleApplies) {
  TempDir t;
  auto refused = [&](const std::vector<std::string>& args, const std::string& words,
                     const std::map<std::string, std::string>& env = {}) {
    const CliRun r = collie(args, {}, env);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("# Out of bounds"), std::string::npos) << r.out;
  };
  refused({"perf", "alltoallv", "-np", "2", "-b", "8", "-e", "16", "-n", "1"},
          "alltoallv: nothing to measure: no size from 8 to 16 bytes gives a rank one element to "
          "move on 2 ranks");
  const std::string small = t.write("small.txt", "8 8\n8 8\n");
  refused({"perf", "alltoallv", "-np", "2", "-n", "1", "--traffic", "file:" + small},
          "alltoallv: nothing to measure: its traffic, matrix " + small +
              " (2x2 bytes, scale 1), sends nothing once each cell is cut down to a multiple of "
              "16 bytes");
  // The same matrix scaled by 4 through --traffic-scale, from nccl-tests' variable.
  const std::string json = (t.dir / "scaled.json").string();
  const CliRun r = collie(
      {"perf", "alltoallv", "-np", "2", "-n", "1", "-w", "0", "--traffic-scale", "4", "-J", json},
      {}, {{"NCCL_TESTS_ALLTOALLV_MATRIX_FILE", small}});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("scale 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("          64"), std::string::npos) << r.out;  // the busiest rank's bytes
}

TEST(CliBadInput, OutputPathsAreCheckedBeforeAnyRankStarts) {
  TempDir t;
  const std::string missing = (t.dir / "no_such_dir" / "r.json").string();
  // -N 0 would run forever: only a check before the launch can answer at once.
  expect_usage({"perf", "-np", "2", "-N", "0", "-J", missing}, "directory '");
  expect_usage({"perf", "-np", "2", "-N", "0", "--csv", t.dir.string()}, "is a directory");
  expect_usage({"perf", "-np", "2", "-N", "0", "--jsonl", missing}, "--jsonl '");
  // --csv and --jsonl append: what the writers would refuse is refused before the launch too.
  const std::string foreign = t.write("other.csv", "time,value\n1,2\n");
  expect_usage({"perf", "-np", "2", "-N", "0", "--csv", foreign},
               "already holds other data (its first line is not collie perf's CSV header)");
  const fs::path link = t.dir / "link.jsonl";
  fs::create_symlink(t.dir / "elsewhere.jsonl", link);
  expect_usage({"perf", "-np", "2", "-N", "0", "--jsonl", link.string()}, "is a symlink");
  EXPECT_FALSE(fs::exists(t.dir / "elsewhere.jsonl"));
  expect_usage({"probe", "connectivity", "-np", "2", "-J", missing}, "-J '");
  const std::string spec =
      t.write("ok.yaml", "checks:\n  - probe: connectivity\n    rules: {all_reachable: true}\n");
  expect_usage({"accept", "--spec", spec, "-np", "2", "--junit", missing}, "--junit '");
  expect_usage({"accept", "--spec", spec, "-np", "0"}, "-np must be in 1..4096");
  expect_usage({"accept", "--spec", spec, "-np", "2", "--html", t.dir.string()}, "--html '");
  // A directory its owner may not write to. Root writes anywhere (and CI runs as root), so there
  // the binary runs as the directory's owner, an unprivileged user (setpriv drops root).
  const fs::path ro = t.dir / "ro";
  fs::create_directories(ro);
  std::vector<std::string> as_owner;
  if (::geteuid() == 0) {
    const int nobody = 65534;
    ASSERT_EQ(::chown(ro.c_str(), nobody, nobody), 0) << ro;
    as_owner = {"/usr/bin/setpriv", fmt::format("--reuid={}", nobody),
                fmt::format("--regid={}", nobody), "--clear-groups", "--"};
  }
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::others_exec);
  fs::permissions(t.dir, fs::perms::others_exec, fs::perm_options::add);
  expect_usage({"perf", "-np", "2", "-N", "0", "-J", (ro / "r.json").string()}, "cannot be created",
               as_owner);
}

TEST(CliBadInput, ProbeNumbersAndNp) {
  expect_usage({"probe", "pairwise", "--slow-threshold", "nan"}, "--slow-threshold in (0, 1)");
  expect_usage({"probe", "connectivity", "--interval", "nan"}, "--interval in 0..3600");
  expect_usage({"probe", "stragglers", "--late-us", "inf"}, "--late-us in 0..1e9");
  expect_usage({"probe", "pairwise", "--bytes", "1e30"}, "--bytes: '1e30' is larger than");
  expect_usage({"probe", "pairwise", "-np", "5000"}, "-np must be in 1..4096");
  expect_usage({"probe", "pairwise", "-np", "0"}, "-np must be in 1..4096");
  expect_usage({"probe", "pairwise", "--capacity-fraction", "1"},
               "--capacity-fraction and --reverse-fraction in [0, 1)");
  expect_usage({"probe", "pairwise", "--reverse-fraction", "nan"},
               "--capacity-fraction and --reverse-fraction in [0, 1)");
}

// nccl on a host that cannot run it (this CI: no CUDA driver; or a build without CUDA): one line
// naming what is missing, before any rank starts. The env probe reads the host and still runs.
TEST(CliBadInput, UnusableBackendIsOneLineBeforeAnyRank) {
  const std::string why = backend_unavailable_reason("nccl");
  if (why.empty()) GTEST_SKIP() << "nccl can run on this host";
  for (const char* probe : {"connectivity", "pairwise", "stragglers"})
    expect_usage({"probe", probe, "--backend", "nccl", "-np", "2"}, why);
  expect_usage({"perf", "--backend", "nccl", "-np", "1"}, why);
  expect_usage({"perf", "-G", "1", "-np", "1"},
               "-G needs a CUDA backend (--backend nccl); gloo runs on the host");
}

TEST(CliBadInput, AcceptSpecNumbersAndLimits) {
  TempDir t;
  auto spec = [&](const std::string& name, const std::string& check) {
    return t.write(name, "checks:\n  - " + check + "\n");
  };
  const std::string rule = "\n    rules: {min_busbw_gbps: {\"1K\": 1}}";
  expect_usage({"accept", "--spec", spec("a.yaml", "perf: all_reduce\n    iters: 1e15" + rule)},
               "iters must be a non-negative integer (at most 1000000000)");
  expect_usage(
      {"accept", "--spec", spec("b.yaml", "perf: all_reduce\n    iters: 1000000000000000" + rule)},
      "iters must be a non-negative integer (at most 1000000000)");
  expect_usage(
      {"accept", "--spec", spec("c.yaml", "perf: all_reduce\n    max_bytes: \"1e30\"" + rule)},
      "max_bytes: '1e30' is larger than");
  expect_usage({"accept", "--spec", spec("d.yaml", "perf: all_reduce\n    min_bytes: 1e30" + rule)},
               "at most 1T");
  expect_usage({"accept", "--spec",
                spec("e.yaml",
                     "probe: pairwise\n    slow_threshold: .nan\n    rules: "
                     "{max_slow_hosts: 0}")},
               "slow_threshold must be a non-negative number");
  expect_usage({"accept", "--spec",
                t.write("f.json",
                        "{\"checks\": [{\"probe\": \"pairwise\", \"rules\": "
                        "{\"min_link_gbps\": 1e999}}]}")},
               "not valid JSON");
}

TEST(CliBadInput, YamlAliasBombAndDeepSpecsAreRefused) {
  TempDir t;
  // 342 bytes naming 9^9 (387 million) strings once the aliases are expanded.
  std::string bomb =
      "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    const char p = static_cast<char>(c - 1);
    bomb += fmt::format("{0}: &{0} [*{1},*{1},*{1},*{1},*{1},*{1},*{1},*{1},*{1}]\n", c, p);
  }
  ASSERT_LT(bomb.size(), 400u);
  expect_usage({"accept", "--spec", t.write("bomb.yaml", bomb)},
               "the spec has more than 100000 values");
  expect_usage({"accept", "--spec",
                t.write("deep.json", std::string(100000, '[') + std::string(100000, ']'))},
               "nested deeper than 64 levels");
  expect_usage({"accept", "--spec",
                t.write("deep.yaml", "a: " + std::string(100, '[') + std::string(100, ']'))},
               "nested deeper than 64 levels");
  expect_usage({"accept", "--spec", t.write("big.json", std::string(2 << 20, ' '))},
               "is 2097152 bytes, more than the 1048576 read");
}

TEST(CliBadInput, ReportCompareNumbers) {
  const std::string g =
      std::string(COLLIE_SOURCE_DIR) + "/tests/reports/golden/report_input_gloo4.json";
  auto compare = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = {"report", "compare", g, g};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  expect_usage(compare({"--max-regression", "nan%"}),
               "--max-regression 'nan%' is not a percentage");
  expect_usage(compare({"--max-regression", "inf"}), "is not a percentage");
  expect_usage(compare({"--min-size", "1e30"}), "--min-size '1e30' is larger than");
  expect_usage(compare({"--format", "yaml"}), "--format");
  // The same flags with good values pass (the file against itself).
  const CliRun ok = collie(compare({"--max-regression", "5%", "--min-size", "1K"}));
  EXPECT_EQ(ok.code, 0) << ok.err;
}

// Issue 40: a FIFO made every report reader block for ever, /dev/zero ended in "internal error:
// std::bad_alloc" (exit 4). Regular files only, bounded, one line, exit 2, as analyze reads.
TEST(CliBadInput, ReportReadersTakeRegularFilesOnly) {
  TempDir t;
  const std::string g =
      std::string(COLLIE_SOURCE_DIR) + "/tests/reports/golden/report_input_gloo4.json";
  const std::string fifo = (t.dir / "results.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string out = (t.dir / "out").string();
  for (const auto& [bad, says] : {std::pair<std::string, std::string>{fifo, "is a FIFO"},
                                  {"/dev/zero", "is a character device"}}) {
    expect_usage({"report", "render", bad, "--format", "md"}, bad + " " + says);
    expect_usage({"report", "compare", g, bad}, bad + " " + says);
    expect_usage({"report", "compare", bad, g}, bad + " " + says);
    expect_usage({"report", "baseline", g, bad, "-o", out}, bad + " " + says);
  }
}

TEST(CliBadInput, ResultFileNumbersAreValidated) {
  TempDir t;
  std::ifstream in(std::string(COLLIE_SOURCE_DIR) +
                   "/tests/reports/golden/report_input_gloo2.json");
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string key = "\"size_bytes\": 1024";
  ASSERT_NE(good.find(key), std::string::npos);
  auto with = [&](const std::string& name, const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    return t.write(name, text);
  };
  struct Case {
    std::string file, words;
  } cases[] = {
      {with("a.json", key, "\"size_bytes\": 1e999"), "not usable JSON"},
      {with("b.json", key, "\"size_bytes\": -1024"), "'size_bytes' is -1024, below 0"},
      {with("c.json", key, "\"size_bytes\": 1e300"), "'size_bytes' is '1e+300', not an integer"},
      {with("d.json", "\"root\": -1", "\"root\": 1099511627776"), "'root' is '1099511627776'"},
      {with("e.json", "\"iter_stats\": {", "\"iter_stats\": 5, \"x\": {"), "iter_stats"},
  };
  for (const Case& c : cases) {
    expect_usage({"report", "render", c.file, "--format", "table"}, c.words);
  }
  const CliRun ok = collie({"report", "render", t.write("ok.json", good), "--format", "table"});
  EXPECT_EQ(ok.code, 0) << ok.err;
}

}  // namespace
}  // namespace collie
