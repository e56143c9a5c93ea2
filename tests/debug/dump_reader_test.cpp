// Hostile flight-recorder dumps (issue 17): analysis time and memory follow the input's size,
// never a number inside it; malformed numbers are one clear line and exit 2 from the real CLI.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "debug/analyzer.h"
#include "debug/flight_recorder.h"
#include "support/child_process.h"
#include "support/time_scale.h"

namespace collie {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ChildProcess;
using testing::scaled;

json entry(uint64_t record, json seq, const char* op = "all_reduce",
           const char* state = "completed") {
  return {{"record_id", record},
          {"pg_id", "0"},
          {"collective_seq_id", seq},
          {"p2p_seq_id", 0},
          {"profiling_name", fmt::format("gloo:{}", op)},
          {"input_sizes", {{1024}}},
          {"input_dtypes", {"Float"}},
          {"state", state},
          {"is_p2p", false},
          {"root", -1},
          {"peer", -1},
          {"time_created_ns", 1}};
}

// `entries` is a vector, not a json: a one-element braced list `{entry(...)}` converted to json
// is that element itself under clang (an object) and an array under GCC.
json dump(json rank, json world, std::vector<json> entries) {
  json ranks = json::array();
  if (world.is_number_integer() && world.get<int64_t>() > 0 && world.get<int64_t>() <= 16) {
    for (int i = 0; i < world.get<int>(); ++i) ranks.push_back(i);
  }
  return {{"version", 1},
          {"rank", rank},
          {"world_size", world},
          {"reason", "test"},
          {"dump_time_ns", 2},
          {"pg_config", {{"0", {{"desc", "default_pg"}, {"ranks", ranks}}}}},
          {"pg_status", {{"0", {{"last_completed_collective", 1}}}}},
          {"entries", json(entries)}};
}

void expect_rejected(const std::string& text, const std::string& words) {
  try {
    parse_dump(text);
    ADD_FAILURE() << "accepted: " << text.substr(0, 300);
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(DumpReader, NegativeAndNonIntegerNumbersAreRejected) {
  expect_rejected(dump(0, 2, {entry(1, -5)}).dump(), "collective_seq_id -5 is negative");
  expect_rejected(dump(0, 2, {entry(1, 1.5)}).dump(), "collective_seq_id is 1.5");
  expect_rejected(dump(-1, 2, {entry(1, 1)}).dump(), "rank -1 is not a rank");
  expect_rejected(dump(2, 2, {entry(1, 1)}).dump(), "rank 2 is not below world_size 2");
  expect_rejected(dump(0, 2000000001, {entry(1, 1)}).dump(), "world_size 2000000001 is not in");
  expect_rejected(dump(0, -3, {entry(1, 1)}).dump(), "world_size -3");
  json e = entry(1, 1);
  e["peer"] = -7;
  expect_rejected(dump(0, 2, {e}).dump(), "peer -7 is not a rank");
  e = entry(1, 1);
  e["root"] = 1ULL << 40;
  expect_rejected(dump(0, 2, {e}).dump(), "root 1099511627776");
  e = entry(1, 1);
  e["pg_id"] = "7";
  expect_rejected(dump(0, 2, {e}).dump(), "group '7' is not in pg_config");
  json d = dump(0, 2, {entry(1, 1)});
  d["pg_config"]["0"]["ranks"] = {0, -4};
  expect_rejected(d.dump(), "rank -4 is not a rank");
  expect_rejected(dump(0, 2, {1, 2}).dump(), "not an object");
  expect_rejected("[]", "not a JSON object");
  expect_rejected("{\"rank\": 0", "not a collie flight-recorder dump");
}

TEST(DumpReader, DeepNestingIsRejectedWithoutRecursion) {
  std::string deep = dump(0, 2, json::array()).dump();
  const std::string nest = std::string(200000, '[') + std::string(200000, ']');
  deep.replace(deep.find("\"entries\":[]"), 12, "\"entries\":[{\"x\":" + nest + "}]");
  expect_rejected(deep, "nested deeper than 16 levels");
}

TEST(DumpReader, HugeSeqIdsAreComparedNotCountedThrough) {
  // Rank 1 recorded seq 2^63-1, rank 0 only seq 1: the old walk counted 2^63 seqs.
  std::vector<RankDump> d = {parse_dump(dump(0, 2, {entry(1, 1)}).dump()),
                             parse_dump(dump(1, 2, {entry(1, 1), entry(2, INT64_MAX)}).dump())};
  const auto t0 = std::chrono::steady_clock::now();
  const Analysis a = analyze(d);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, scaled(std::chrono::seconds(1)));
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings[0].kind, "NOT_ALL_JOINED") << to_text(a);
  EXPECT_EQ(a.findings[0].seq, static_cast<uint64_t>(INT64_MAX));
  EXPECT_EQ(a.culprits(), std::vector<int>{0});
}

TEST(DumpReader, ManyMissingRanksAreOneFinding) {
  const Analysis a = analyze({parse_dump(dump(0, kMaxAnalyzeWorld, {entry(1, 1)}).dump())});
  EXPECT_EQ(a.world_size, kMaxAnalyzeWorld);
  ASSERT_EQ(a.findings.size(), 1u) << to_text(a).substr(0, 2000);
  EXPECT_EQ(a.findings[0].kind, "MISSING_DUMP");
  EXPECT_EQ(a.findings[0].culprits.size(), static_cast<size_t>(kMaxAnalyzeWorld - 1));
  EXPECT_NE(a.findings[0].message.find("ranks 1-65535"), std::string::npos);
  // A few missing ranks are still named one by one.
  const Analysis b = analyze({parse_dump(dump(0, 3, {entry(1, 1)}).dump())});
  ASSERT_EQ(b.findings.size(), 2u) << to_text(b);
  EXPECT_EQ(b.findings[1].culprits, std::vector<int>{2});
}

struct DumpDir {
  fs::path dir = fs::temp_directory_path() / fmt::format("collie_c17a_dumps_{}", ::getpid());
  DumpDir() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~DumpDir() { fs::remove_all(dir); }
  void write(int rank, const std::string& text, const char* name = nullptr) const {
    std::ofstream(dir / (name ? name : fr_dump_file_name(rank))) << text;
  }
};

struct CliRun {
  int code = -1;
  std::string out, err;
};

CliRun analyze_cli(const std::vector<std::string>& args, std::chrono::seconds within) {
  std::vector<std::string> argv = {COLLIE_BIN, "analyze"};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess p(argv, {});
  auto st = p.wait(scaled(within));
  EXPECT_TRUE(st.has_value()) << "collie analyze did not finish within " << scaled(within).count()
                              << " s";
  return {st.value_or(-1), p.out(), p.err()};
}

TEST(AnalyzeCliHostile, BadNumbersExit2WithOneLineAndNeverSpin) {
  DumpDir d;
  struct Case {
    json dump;
    const char* words;
  } cases[] = {
      {dump(0, 2, {entry(1, -5)}), "collective_seq_id -5 is negative"},
      {dump(0, 2000000001, {entry(1, 1)}), "world_size 2000000001 is not in 0..65536"},
      {dump(-2, 2, {entry(1, 1)}), "rank -2 is not a rank"},
  };
  for (const Case& c : cases) {
    d.write(0, c.dump.dump());
    const CliRun r = analyze_cli({d.dir.string()}, std::chrono::seconds(20));
    EXPECT_EQ(r.code, 2) << c.words << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(c.words), std::string::npos) << r.err;
  }
  // 2^63-1 is a valid seq: analyzed (and a problem found) without counting up to it.
  d.write(0, dump(0, 2, {entry(1, 1)}).dump());
  d.write(1, dump(1, 2, {entry(1, 1), entry(2, INT64_MAX, "all_reduce", "started")}).dump());
  const auto t0 = std::chrono::steady_clock::now();
  const CliRun r = analyze_cli({d.dir.string()}, std::chrono::seconds(20));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, scaled(std::chrono::seconds(10)));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("sequence number: 9223372036854775807"), std::string::npos) << r.out;
  // Out-of-range --world-size is a usage error.
  const CliRun w =
      analyze_cli({d.dir.string(), "--world-size", "2000000001"}, std::chrono::seconds(20));
  EXPECT_EQ(w.code, 2) << w.err;
  EXPECT_NE(w.err.find("--world-size 2000000001 is not in 1..65536"), std::string::npos) << w.err;
}

TEST(AnalyzeCliHostile, SecondDumpForARankIsSkippedWithItsReason) {
  DumpDir d;
  d.write(0, dump(0, 1, {entry(1, 1)}).dump());
  d.write(0, dump(0, 1, {entry(1, 1)}).dump(), "collie_fr_rank_0_copy.json");
  const CliRun r = analyze_cli({d.dir.string()}, std::chrono::seconds(20));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("rank 0 already has a dump"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace collie
