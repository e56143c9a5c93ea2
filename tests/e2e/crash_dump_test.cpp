// A crash leaves evidence (issue 17): without DETAIL, an all_reduce whose sizes differ across
// ranks makes libgloo throw (EnforceNotMet) on a thread of its own, which ends the process in
// std::terminate. The crash handler must still write that rank's flight-recorder dump, and
// `collie analyze` must name what the crashed rank called. 3 real processes over loopback.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "comm/registry.h"
#include "support/multiprocess.h"

namespace collie {
namespace {

namespace fs = std::filesystem;
using testing::RankContext;
using testing::RankStatus;

std::pair<int, std::string> analyze_cli(const fs::path& dir) {
  std::string out;
  FILE* p = ::popen(
      fmt::format("{} analyze {} --json 2>/dev/null", COLLIE_BIN, dir.string()).c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

TEST(CrashDump, RankEndedByAnExceptionOnGloosThreadLeavesItsDump) {
  ASSERT_NE(find_backend("gloo"), nullptr)
      << "gloo is a required backend (cmake/Dependencies.cmake) but is not registered";
  const fs::path dir = fs::temp_directory_path() / fmt::format("collie_c17a_crash_{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  testing::RunOptions o;
  o.backend = "gloo";
  o.mode = testing::Mode::Processes;
  o.group_timeout = Millis(3000);
  o.deadline = Millis(30000);
  o.env = {{"COLLIE_FR_DUMP_DIR", dir.string()}, {"COLLIE_DEBUG", "OFF"}};
  auto r = testing::run_ranks(
      3,
      [](RankContext& ctx) {
        std::vector<float> a(1024, 1.0f);
        auto t = TensorView::cpu(a.data(), a.size(), DType::Float32);
        ctx.pg->all_reduce(t)->wait();  // healthy: #1
        t = TensorView::cpu(a.data(), ctx.rank == 2 ? 1000 : 1024, DType::Float32);
        ctx.pg->all_reduce(t)->wait();  // rank 2 sends 1000 floats where 1024 are expected
      },
      o);
  SCOPED_TRACE(r.summary());
  std::vector<int> crashed;
  for (const auto& rr : r.ranks) {
    if (rr.status == RankStatus::Died) crashed.push_back(rr.rank);
  }
  ASSERT_FALSE(crashed.empty()) << "expected libgloo to end a rank; " << r.summary();
  for (int rank : crashed) {
    const fs::path f = dir / fmt::format("collie_fr_rank_{}.json", rank);
    ASSERT_TRUE(fs::exists(f)) << "crashed rank " << rank << " left no dump";
    std::ifstream in(f);
    const auto j = nlohmann::json::parse(in);
    EXPECT_NE(j["reason"].get<std::string>().find("uncaught exception"), std::string::npos)
        << j["reason"];
    // Its last op is in the dump: all_reduce #2, not completed.
    ASSERT_FALSE(j["entries"].empty());
    const auto& last = j["entries"].back();
    EXPECT_EQ(last["profiling_name"], "gloo:all_reduce");
    EXPECT_EQ(last["collective_seq_id"], 2);
  }
  auto [code, out] = analyze_cli(dir);
  EXPECT_EQ(code, 1) << out;
  // analyze names the crashed ranks' call (all_reduce #2 with its sizes), not a missing dump.
  for (int rank : crashed) {
    EXPECT_EQ(out.find(fmt::format("rank {} left no flight-recorder dump", rank)),
              std::string::npos)
        << out;
  }
  nlohmann::json a;
  ASSERT_NO_THROW(a = nlohmann::json::parse(out)) << out;
  EXPECT_EQ(a["culprits"], "2") << out;
  bool size_mismatch = false;
  for (const auto& f : a["findings"]) {
    size_mismatch =
        size_mismatch || (f["kind"] == "SIZE_MISMATCH" && f["seq"] == 2 && f["culprits"] == "2");
  }
  EXPECT_TRUE(size_mismatch) << out;
  fs::remove_all(dir);
}

TEST(CrashDump, FatalSignalLeavesTheDumpAndStillKillsTheRank) {
  ASSERT_NE(find_backend("gloo"), nullptr)
      << "gloo is a required backend (cmake/Dependencies.cmake) but is not registered";
  const fs::path dir = fs::temp_directory_path() / fmt::format("collie_c17a_segv_{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  testing::RunOptions o;
  o.backend = "gloo";
  o.mode = testing::Mode::Processes;
  o.group_timeout = Millis(2000);
  o.deadline = Millis(30000);
  o.env = {{"COLLIE_FR_DUMP_DIR", dir.string()}, {"COLLIE_DEBUG", "OFF"}};
  auto r = testing::run_ranks(
      2,
      [](RankContext& ctx) {
        std::vector<float> a(64, 1.0f);
        ctx.pg->all_reduce(TensorView::cpu(a.data(), a.size(), DType::Float32))->wait();
        if (ctx.rank == 1) ::raise(SIGSEGV);
        ctx.pg->all_reduce(TensorView::cpu(a.data(), a.size(), DType::Float32))->wait();
      },
      o);
  SCOPED_TRACE(r.summary());
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_EQ(r.ranks[1].status, RankStatus::Died);
  EXPECT_NE(r.ranks[1].message.find("11"), std::string::npos) << r.ranks[1].message;  // SIGSEGV
  const fs::path f = dir / "collie_fr_rank_1.json";
  ASSERT_TRUE(fs::exists(f));
  std::ifstream in(f);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["reason"], "fatal signal SIGSEGV");
  ASSERT_EQ(j["entries"].size(), 1u);
  EXPECT_EQ(j["entries"][0]["state"], "completed");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace collie
