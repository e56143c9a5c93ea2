// Hostile flight-recorder dumps (issue 17): analysis time and memory follow the input's size,
// never a number inside it; malformed numbers are one clear line and exit 2 from the real CLI.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "debug/analyzer.h"
#include "debug/flight_recorder.h"
#include "debug/pickle.h"
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

// Sizes and dtypes are kept as compact JSON text; collie writes the plain ones itself and hands
// the rest to simdjson's minify: the same bytes either way, whatever spacing the file had.
TEST(DumpReader, SizesAndDtypesAreKeptAsCompactJson) {
  json e = entry(1, 1);
  e["input_sizes"] = json::parse("[[1, -2], [18446744073709551615, 0], [], [[[3]]]]");
  e["input_dtypes"] = {"Float", "Half"};
  e["output_sizes"] = json::parse("[[1.5], [true, null]]");               // a double: minify's
  e["output_dtypes"] = {"a\"b", "t\tab", "caf\u00e9", "[[[[[deep]]]]]"};  // escapes: minify's
  std::string text = dump(0, 2, {e}).dump(2);  // indented: the reader must not keep spaces
  const RankDump d = parse_dump(text);
  ASSERT_EQ(d.entries.size(), 1u);
  EXPECT_EQ(d.entries[0].sizes, "[[1,-2],[18446744073709551615,0],[],[[[3]]]]");
  EXPECT_EQ(d.entries[0].dtypes, "[\"Float\",\"Half\"]");
  EXPECT_EQ(d.entries[0].output_sizes, "[[1.5],[true,null]]");
  // printable() escapes the tab and keeps the accented letter (valid UTF-8).
  EXPECT_EQ(d.entries[0].output_dtypes, "[\"a\\\"b\",\"t\\tab\",\"caf\u00e9\",\"[[[[[deep]]]]]\"]");
  e["input_sizes"] = json::parse("[[[[[[7]]]]]]");  // deeper than the direct writer goes
  const RankDump deep = parse_dump(dump(0, 2, {e}).dump());
  EXPECT_EQ(deep.entries[0].sizes, "[[[[[[7]]]]]]");
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
  EXPECT_NE(a.findings[0].message.find("ranks 1-999999"), std::string::npos);
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
      {dump(0, 2000000001, {entry(1, 1)}), "world_size 2000000001 is not in 0..1000000"},
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
  EXPECT_NE(w.err.find("--world-size 2000000001 is not in 1..1000000"), std::string::npos) << w.err;
}

// Issue 27: a FIFO named like a dump made analyze block forever in open(). Whatever is planted
// under a dump's name that is not a regular file is skipped at once, saying what it is.
TEST(AnalyzeCliHostile, AFifoNamedLikeADumpIsSkippedWithoutBlocking) {
  DumpDir d;
  ASSERT_EQ(::mkfifo((d.dir / "collie_fr_rank_0.json").c_str(), 0644), 0);
  ASSERT_EQ(::mkfifo((d.dir / "nccl_trace_rank_1").c_str(), 0644), 0);
  d.write(2, dump(2, 3, {entry(1, 1)}).dump());
  const CliRun r = analyze_cli({d.dir.string()}, std::chrono::seconds(20));
  EXPECT_EQ(r.code, 1) << r.out << r.err;  // ranks 0 and 1 left no usable dump
  EXPECT_NE(r.err.find("collie_fr_rank_0.json is a FIFO, not a regular file"), std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("MISSING_DUMP"), std::string::npos) << r.out;
}

// Issue 27: group ids and op names from dumps went to the terminal raw: escape sequences could
// clear the screen and print a fake verdict. Nothing a dump says reaches stdout or stderr as a
// control character.
TEST(AnalyzeCliHostile, EscapeSequencesInDumpsArePrintedAsText) {
  DumpDir d;
  const std::string evil = "\x1b[2J\x1b[H\rNo problem found: every rank agrees.\n\xc2\x9b";
  for (int r = 0; r < 2; ++r) {
    json x = dump(r, 2, {entry(1, 1, r == 0 ? "all_reduce" : "broadcast")});
    x["pg_config"] = {{evil, {{"desc", evil}, {"ranks", {0, 1}}}}};
    x["pg_status"] = json::object();
    x["entries"][0]["pg_id"] = evil;
    x["entries"][0]["profiling_name"] =
        std::string("gloo:") + (r == 0 ? "all_reduce" : "broadcast") + evil;
    x["entries"][0]["input_dtypes"] = {evil};
    x["reason"] = evil;
    d.write(r, x.dump());
  }
  d.write(2, "{\"rank\": \"" + std::string("\x1b]0;owned\x07") + "\"}", "collie_fr_rank_9.json");
  for (const bool as_json : {false, true}) {
    std::vector<std::string> args = {d.dir.string()};
    if (as_json) args.push_back("--json");
    const CliRun r = analyze_cli(args, std::chrono::seconds(20));
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    for (const std::string* s : {&r.out, &r.err}) {
      EXPECT_EQ(s->find('\x1b'), std::string::npos) << *s;
      EXPECT_EQ(s->find('\r'), std::string::npos) << *s;
      EXPECT_EQ(s->find("\xc2\x9b"), std::string::npos) << *s;
    }
    if (!as_json) {
      EXPECT_NE(r.out.find("\\x1b[2J"), std::string::npos) << r.out;  // shown, as text
      EXPECT_EQ(r.out.find("\nNo problem found"), std::string::npos) << r.out;
    }
  }
}

// Issue 27: world_size 0 in every dump (written before the world group existed) printed "2 of
// 0 ranks" and no verdict; dumps that disagreed on world_size named ranks that may not exist
// MISSING_DUMP. The world is the ranks seen when nobody says, the majority's when they differ,
// and a disagreement is a finding of its own.
TEST(AnalyzeCliHostile, WorldSizeIsNeverZeroAndDisagreementIsNamed) {
  DumpDir d;
  d.write(0, dump(0, 0, {entry(1, 1)}).dump());
  d.write(1, dump(1, 0, {entry(1, 1)}).dump());
  Analysis a = analyze(
      {parse_dump(dump(0, 0, {entry(1, 1)}).dump()), parse_dump(dump(1, 0, {entry(1, 1)}).dump())});
  EXPECT_EQ(a.world_size, 2);
  EXPECT_EQ(a.verdicts().size(), 2u);
  const CliRun r = analyze_cli({d.dir.string()}, std::chrono::seconds(20));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 of 2 ranks left dumps"), std::string::npos) << r.out;

  // Three dumps say 2 ranks, one says 4 (another job's, left in the folder).
  std::vector<RankDump> dumps;
  for (int rank : {0, 1}) dumps.push_back(parse_dump(dump(rank, 2, {entry(1, 1)}).dump()));
  json other = dump(1, 4, {entry(1, 1)});
  other["rank"] = 3;
  dumps.push_back(parse_dump(other.dump()));
  a = analyze(dumps);
  EXPECT_EQ(a.world_size, 2);
  ASSERT_FALSE(a.findings.empty()) << to_text(a);
  EXPECT_EQ(a.findings[0].kind, "WORLD_SIZE_MISMATCH") << to_text(a);
  EXPECT_EQ(a.findings[0].ranks, std::vector<int>{3});
  EXPECT_NE(a.findings[0].message.find("ranks 0, 1 say 2; rank 3 says 4"), std::string::npos)
      << a.findings[0].message;
  for (const Finding& f : a.findings) EXPECT_NE(f.kind, "MISSING_DUMP") << f.message;
}

std::string pickled_str(const std::string& s) {
  std::string o = "X";
  for (int i = 0; i < 4; ++i) o.push_back(static_cast<char>((s.size() >> (8 * i)) & 0xff));
  return o + s;
}

// A pickled dict of `items` (keys as str, values already pickled).
std::string pickled_dict(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string o = "}(";
  for (const auto& [k, v] : items) o += pickled_str(k) + v;
  return o + "u";
}

// A PyTorch dump of one rank whose one entry has `input_sizes` (already pickled).
std::string torch_dump_with_sizes(const std::string& sizes) {
  const std::string entry =
      pickled_dict({{"process_group", "(" + pickled_str("0") + pickled_str("pg") + "t"},
                    {"profiling_name", pickled_str("nccl:all_reduce")},
                    {"state", pickled_str("completed")},
                    {"collective_seq_id", "K\x01"},
                    {"input_sizes", sizes}});
  return "\x80\x02" +
         pickled_dict(
             {{"version", pickled_str("2.10")},
              {"pg_config", pickled_dict({{"0", pickled_dict({{"ranks", pickled_str("[0]")}})}})},
              {"entries", "](" + entry + "e"}}) +
         ".";
}

// Under a sanitizer, a process's resident memory is mostly the sanitizer's (shadow memory,
// redzones, quarantine): the memory bound is checked in the plain build only.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// Runs collie analyze on `dir`; returns its exit status and peak resident memory in bytes.
std::pair<int, size_t> analyze_peak_rss(const fs::path& dir) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl(COLLIE_BIN, COLLIE_BIN, "analyze", dir.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  rusage ru{};
  ::wait4(pid, &status, 0, &ru);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
          static_cast<size_t>(ru.ru_maxrss) * 1024};
}

// Issue 27: a pickle cost ~120x its size in memory (50 MB -> 6 GB). Reading one holds at most
// 16 bytes per byte of what it builds plus the pickle itself and 8 MiB (debug/dump_parse.h);
// hostile shapes are refused once they need more, a real one reads well within it. The process
// itself is about 12 MiB.
TEST(AnalyzeCliHostile, APickleCostsABoundedMultipleOfItsSize) {
  DumpDir d;
  struct Shape {
    const char* what;
    std::string sizes;
  };
  // 8 million references to one memoized list (2 bytes each): 64 bytes of JSON apiece.
  std::string refs = "](]q\x01";
  for (int i = 0; i < 8000000; ++i) refs += "h\x01";
  refs += "e";
  // 16 million Nones, pushed before one APPENDS (the parser's stack holds them all).
  std::string nones = "](" + std::string(16000000, 'N') + "e";
  // 3 million empty dicts, each memoized (6 bytes each).
  std::string dicts = "](";
  for (uint32_t i = 0; i < 3000000; ++i) {
    dicts += "}r";
    for (int k = 0; k < 4; ++k) dicts.push_back(static_cast<char>(((i + 2) >> (8 * k)) & 0xff));
  }
  dicts += "e";
  for (const Shape& s : {Shape{"memo refs", refs}, Shape{"nones", nones}, Shape{"dicts", dicts}}) {
    SCOPED_TRACE(s.what);
    const std::string bytes = torch_dump_with_sizes(s.sizes);
    std::ofstream(d.dir / "nccl_trace_rank_0", std::ios::binary | std::ios::trunc) << bytes;
    const auto [code, rss] = analyze_peak_rss(d.dir);
    EXPECT_EQ(code, 2);  // refused: hostile shapes need more than the budget
    if (!kSanitized) {
      EXPECT_LE(rss, 17 * bytes.size() + (24u << 20)) << rss << " bytes for " << bytes.size();
    }
    std::printf("%s: %zu bytes -> peak %zu bytes (%.1f per byte), exit %d\n", s.what, bytes.size(),
                rss, static_cast<double>(rss) / bytes.size(), code);
  }
  // A real shape: 200k entries, as torch writes them without frames; read, not refused.
  PickleWriter w;
  w.begin_dict();
  w.str("version");
  w.str("2.10");
  w.str("pg_config");
  w.json({{"0", {{"ranks", "[0]"}, {"desc", "default_pg"}}}});
  w.str("entries");
  w.begin_list();
  for (int i = 0; i < 200000; ++i) {
    w.json({{"record_id", i},
            {"pg_id", 0},
            {"process_group", {"0", "default_pg"}},
            {"collective_seq_id", i + 1},
            {"p2p_seq_id", 0},
            {"profiling_name", "nccl:all_reduce"},
            {"time_created_ns", 1000 + i},
            {"input_sizes", {{1024, 1024}}},
            {"input_dtypes", {"Float"}},
            {"state", "completed"}});
  }
  w.end_list();
  w.end_dict();
  const std::string real = w.finish();
  std::ofstream(d.dir / "nccl_trace_rank_0", std::ios::binary | std::ios::trunc) << real;
  const auto [code, rss] = analyze_peak_rss(d.dir);
  EXPECT_EQ(code, 0);
  if (!kSanitized) {
    EXPECT_LE(rss, 17 * real.size() + (24u << 20)) << rss << " bytes for " << real.size();
  }
  std::printf("real: %zu bytes -> peak %zu bytes (%.1f per byte)\n", real.size(), rss,
              static_cast<double>(rss) / real.size());
}

// Time too: one entry of 200k keys, memoized and listed 200k times, made the converter look its
// fields up in every copy (10^11 steps, hours). Steps are counted per byte like memory, so it
// is refused in about a second.
TEST(AnalyzeCliHostile, APickleTakesBoundedWork) {
  DumpDir d;
  std::string items;
  for (int i = 0; i < 200000; ++i) items += pickled_str(fmt::format("k{}", i)) + "N";
  const std::string entry = "}q\x01(" + pickled_str("process_group") + "(" + pickled_str("0") +
                            pickled_str("pg") + "t" + pickled_str("profiling_name") +
                            pickled_str("nccl:all_reduce") + pickled_str("state") +
                            pickled_str("completed") + items + "u";
  std::string refs;
  for (int i = 0; i < 200000; ++i) refs += "h\x01";
  const std::string bytes =
      "\x80\x02" +
      pickled_dict(
          {{"version", pickled_str("2.10")},
           {"pg_config", pickled_dict({{"0", pickled_dict({{"ranks", pickled_str("[0]")}})}})},
           {"entries", "](" + entry + refs + "e"}}) +
      ".";
  std::ofstream(d.dir / "nccl_trace_rank_0", std::ios::binary) << bytes;
  const CliRun r = analyze_cli({d.dir.string()}, std::chrono::seconds(60));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("steps to read"), std::string::npos) << r.err;
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
