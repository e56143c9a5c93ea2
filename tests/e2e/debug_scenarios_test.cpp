// "My job hangs" scenarios on the Gloo backend, 3 real processes over loopback. In each, DETAIL
// checks or the watchdog must name the culprit rank and the op within timeout + 5 s, every
// surviving rank must leave a flight-recorder dump, and `collie analyze` must name the same
// culprit, with the typed verdict of the fault (issue 41) about that rank.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "comm/registry.h"
#include "comm/rendezvous.h"
#include "debug/dump_service.h"
#include "stack/init.h"
#include "support/multiprocess.h"

namespace collie {
namespace {

namespace fs = std::filesystem;
using testing::RankContext;
using testing::RankStatus;
using testing::RunResult;

constexpr Millis kTimeout{2000};
constexpr int kWorld = 3;

TensorView view(std::vector<float>& v) {
  return TensorView::cpu(v.data(), v.size(), DType::Float32);
}

struct Scenario {
  std::string name;
  std::string debug;  // COLLIE_DEBUG
  std::vector<int> survivors = {0, 1, 2};
  std::function<void(RankContext&)> body;
};

// Runs the body; then waits (bounded) for this rank's dump and for the other survivors, so the
// store (served by rank 0) stays up while everyone's watcher picks up the dump request.
void run_body(const Scenario& s, RankContext& ctx) {
  const auto start = std::chrono::steady_clock::now();
  std::string error;
  try {
    s.body(ctx);
  } catch (const std::exception& e) {
    error = e.what();
  }
  const auto ms = std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - start);
  auto& ds = DumpService::global();
  for (int i = 0; i < 600 && ds.dumps_written() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ds.flush(std::chrono::seconds(2));
  int idx = 0;
  for (size_t i = 0; i < s.survivors.size(); ++i) {
    if (s.survivors[i] == ctx.rank) idx = static_cast<int>(i);
  }
  store_barrier(*ctx.pg->info().store, "debug_test_exit", idx, static_cast<int>(s.survivors.size()),
                Millis(20000));
  if (!error.empty()) throw std::runtime_error(fmt::format("{} [after {} ms]", error, ms.count()));
}

RunResult run(const Scenario& s, const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  ::setenv("COLLIE_FR_DUMP_DIR", dir.c_str(), 1);
  ::setenv("COLLIE_DEBUG", s.debug.c_str(), 1);
  testing::RunOptions o;
  o.backend = "gloo";
  o.mode = testing::Mode::Processes;
  o.group_timeout = kTimeout;
  o.deadline = Millis(40000);
  auto r = testing::run_ranks(
      kWorld, [&](RankContext& ctx) { run_body(s, ctx); }, o);
  ::unsetenv("COLLIE_FR_DUMP_DIR");
  ::unsetenv("COLLIE_DEBUG");
  return r;
}

std::pair<int, std::string> analyze_cli(const fs::path& dir) {
  std::string out;
  FILE* p =
      ::popen(fmt::format("{} analyze {} --json 2>&1", COLLIE_BIN, dir.string()).c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

// The checks every scenario shares.
void expect_diagnosed(const Scenario& s, const RunResult& r, int culprit,
                      const std::vector<std::pair<int, std::string>>& messages,
                      const std::string& analyze_kind, const std::string& verdict) {
  SCOPED_TRACE(s.name + ": " + r.summary());
  ASSERT_EQ(r.ranks.size(), static_cast<size_t>(kWorld));
  for (const auto& [rank, text] : messages) {
    const auto& rr = r.ranks[rank];
    EXPECT_EQ(rr.status, RankStatus::Failed) << "rank " << rank;
    EXPECT_NE(rr.message.find(text), std::string::npos) << "rank " << rank << ": " << rr.message;
    // Named within timeout + 5 s of the failing call.
    auto at = rr.message.rfind("[after ");
    ASSERT_NE(at, std::string::npos) << rr.message;
    EXPECT_LE(std::stol(rr.message.substr(at + 7)), kTimeout.count() + 5000) << rr.message;
  }
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("collie_e2e_{}_{}", s.name, ::getpid());
  for (int rank : s.survivors) {
    EXPECT_TRUE(fs::exists(dir / fmt::format("collie_fr_rank_{}.json", rank))) << "rank " << rank;
  }
  auto [code, out] = analyze_cli(dir);
  EXPECT_EQ(code, 1) << out;
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(out)) << out;
  EXPECT_EQ(j["culprits"], std::to_string(culprit)) << out;
  bool kind = false;
  for (const auto& f : j["findings"]) kind = kind || f["kind"] == analyze_kind;
  EXPECT_TRUE(kind) << analyze_kind << " not in " << out;
  // The first verdict (causes come first) is the fault's, about the culprit alone.
  ASSERT_FALSE(j["verdicts"].empty()) << out;
  EXPECT_EQ(j["verdicts"][0]["kind"], verdict) << out;
  EXPECT_EQ(j["verdicts"][0]["ranks"], std::to_string(culprit)) << out;
  fs::remove_all(dir);
}

class DebugScenario : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(find_backend("gloo"), nullptr)
        << "gloo is a required backend (cmake/Dependencies.cmake) but is not registered";
  }
  RunResult go(const Scenario& s) {
    return run(s, fs::temp_directory_path() / fmt::format("collie_e2e_{}_{}", s.name, ::getpid()));
  }
};

TEST_F(DebugScenario, RankSkipsACollective) {
  Scenario s{"skip", "DETAIL", {0, 1, 2}, [](RankContext& ctx) {
               std::vector<float> a(256);
               ctx.pg->all_reduce(view(a))->wait();
               if (ctx.rank != 1) ctx.pg->broadcast(view(a))->wait();
               ctx.pg->all_reduce(view(a))->wait();
             }};
  auto r = go(s);
  const std::string m =
      "ranks 0, 2 called broadcast #2 (float32[256], root 0); rank 1 called all_reduce #2 "
      "(float32[256], sum). Differs in: op type";
  expect_diagnosed(s, r, 1, {{0, m}, {1, m}, {2, m}}, "COLLECTIVE_TYPE_MISMATCH", "MISMATCH");
}

TEST_F(DebugScenario, TwoRanksDisagreeOnShape) {
  Scenario s{"shape", "DETAIL", {0, 1, 2}, [](RankContext& ctx) {
               std::vector<float> a(1024);
               TensorView t = view(a);
               if (ctx.rank == 2) {
                 t.shape.ndim = 2;
                 t.shape.dims[0] = 32;
                 t.shape.dims[1] = 32;
               }
               ctx.pg->all_reduce(t)->wait();
             }};
  auto r = go(s);
  expect_diagnosed(s, r, 2,
                   {{0, "rank 2 called all_reduce #1 (float32[32, 32], sum). Differs in: shape"}},
                   "SIZE_MISMATCH", "MISMATCH");
}

TEST_F(DebugScenario, RanksDisagreeOnDtype) {
  Scenario s{"dtype", "DETAIL", {0, 1, 2}, [](RankContext& ctx) {
               std::vector<float> a(64);
               TensorView t = view(a);
               if (ctx.rank == 2) t.dtype = DType::Int32;
               ctx.pg->all_reduce(t)->wait();
             }};
  auto r = go(s);
  expect_diagnosed(s, r, 2,
                   {{1, "rank 2 called all_reduce #1 (int32[64], sum). Differs in: dtype"}},
                   "DTYPE_MISMATCH", "MISMATCH");
}

TEST_F(DebugScenario, RanksDisagreeOnOp) {
  Scenario s{"op", "DETAIL", {0, 1, 2}, [](RankContext& ctx) {
               std::vector<float> a(1024);
               if (ctx.rank == 2) {
                 ctx.pg->broadcast(view(a))->wait();
               } else {
                 ctx.pg->all_reduce(view(a))->wait();
               }
             }};
  auto r = go(s);
  expect_diagnosed(
      s, r, 2,
      {{0,
        "Detected mismatch between collectives on ranks: ranks 0, 1 called all_reduce #1 "
        "(float32[1024], sum); rank 2 called broadcast #1 (float32[1024], root 0). "
        "Differs in: op type"}},
      "COLLECTIVE_TYPE_MISMATCH", "MISMATCH");
}

TEST_F(DebugScenario, RanksDisagreeOnRoot) {
  Scenario s{"root", "DETAIL", {0, 1, 2}, [](RankContext& ctx) {
               std::vector<float> a(16);
               BroadcastOptions o;
               o.root = ctx.rank == 2 ? 1 : 0;
               ctx.pg->broadcast(view(a), o)->wait();
             }};
  auto r = go(s);
  expect_diagnosed(s, r, 2,
                   {{0, "rank 2 called broadcast #1 (float32[16], root 1). Differs in: root"}},
                   "ROOT_MISMATCH", "MISMATCH");
}

TEST_F(DebugScenario, SendWithoutMatchingRecv) {
  Scenario s{"unmatched_send", "DETAIL", {0, 1, 2}, [](RankContext& ctx) {
               std::vector<float> a(8);
               if (ctx.rank == 0) ctx.pg->send(view(a), 1)->wait();
             }};
  auto r = go(s);
  expect_diagnosed(s, r, 1,
                   {{0,
                     "rank 0 called send #1 to rank 1 (float32[8], tag 0) but rank 1 posted no "
                     "matching recv within 2000 ms"}},
                   "UNMATCHED_P2P", "MISMATCH");
}

TEST_F(DebugScenario, RankSleepsPastTheTimeout) {
  Scenario s{"sleep", "DETAIL", {0, 1, 2}, [](RankContext& ctx) {
               std::vector<float> a(32);
               ctx.pg->all_reduce(view(a))->wait();
               if (ctx.rank == 1) std::this_thread::sleep_for(kTimeout + Millis(2500));
               ctx.pg->all_reduce(view(a))->wait();
             }};
  auto r = go(s);
  expect_diagnosed(
      s, r, 1,
      {{0,
        "ranks 0, 2 called all_reduce #2 (float32[32], sum); rank 1 did not arrive within 2000 ms"},
       {2, "rank 1 did not arrive within 2000 ms"}},
      "NOT_ALL_JOINED", "NOT_JOINED");
}

TEST_F(DebugScenario, WatchdogCatchesASleepingRankWithoutDetail) {
  Scenario s{"watchdog", "OFF", {0, 1, 2}, [](RankContext& ctx) {
               std::vector<float> a(32);
               ctx.pg->all_reduce(view(a))->wait();
               if (ctx.rank == 1) std::this_thread::sleep_for(kTimeout + Millis(2500));
               ctx.pg->all_reduce(view(a))->wait();
             }};
  auto r = go(s);
  // The watchdog names the op and seq on the waiting ranks; the dumps name the culprit.
  expect_diagnosed(s, r, 1, {{0, "all_reduce #2"}, {2, "all_reduce #2"}}, "NOT_ALL_JOINED",
                   "NOT_JOINED");
}

TEST_F(DebugScenario, RankKilledMidRun) {
  Scenario s{"killed", "DETAIL", {0, 1}, [](RankContext& ctx) {
               std::vector<float> a(32);
               ctx.pg->all_reduce(view(a))->wait();
               if (ctx.rank == 2) ctx.die();
               ctx.pg->all_reduce(view(a))->wait();
             }};
  auto r = go(s);
  EXPECT_EQ(r.ranks[2].status, RankStatus::Died);
  expect_diagnosed(s, r, 2,
                   {{0, "rank 2 did not arrive within 2000 ms"}, {1, "rank 2 did not arrive"}},
                   "MISSING_DUMP", "RANK_DEAD");
}

TEST_F(DebugScenario, SubgroupsAreCheckedToo) {
  Scenario s{"subgroup", "DETAIL", {0, 1, 2}, [](RankContext& ctx) {
               auto sub = new_group(*ctx.pg, {1, 2});
               if (!sub) return;
               std::vector<float> a(64);
               if (ctx.rank == 2) {
                 sub->broadcast(view(a))->wait();
               } else {
                 sub->all_reduce(view(a))->wait();
               }
             }};
  auto r = go(s);
  // Ranks are named by their world rank; the analyzer breaks the 1:1 tie towards the lower rank.
  expect_diagnosed(s, r, 2,
                   {{1,
                     "rank 1 called all_reduce #1 (float32[64], sum); rank 2 called broadcast #1 "
                     "(float32[64], root 0). Differs in: op type"}},
                   "COLLECTIVE_TYPE_MISMATCH", "MISMATCH");
}

// Two groups entered in opposite orders: rank 0 calls the world's all_reduce first, ranks 1 and 2
// their subgroup's (all three ranks) first. Each group agrees with itself, so DETAIL cannot see
// it; every rank times out and the dumps show the cycle.
TEST_F(DebugScenario, TwoGroupsEnteredInOppositeOrdersAreADeadlock) {
  Scenario s{"deadlock", "OFF", {0, 1, 2}, [](RankContext& ctx) {
               auto sub = new_group(*ctx.pg, {0, 1, 2});
               std::vector<float> a(64);
               ctx.pg->all_reduce(view(a))->wait();
               if (ctx.rank == 0) {
                 ctx.pg->all_reduce(view(a))->wait();
                 sub->all_reduce(view(a))->wait();
               } else {
                 sub->all_reduce(view(a))->wait();
                 ctx.pg->all_reduce(view(a))->wait();
               }
             }};
  auto r = go(s);
  SCOPED_TRACE(r.summary());
  for (int rank = 0; rank < kWorld; ++rank) {
    EXPECT_EQ(r.ranks[rank].status, RankStatus::Failed) << "rank " << rank;
  }
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("collie_e2e_{}_{}", s.name, ::getpid());
  auto [code, out] = analyze_cli(dir);
  EXPECT_EQ(code, 1) << out;
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(out)) << out;
  ASSERT_FALSE(j["verdicts"].empty()) << out;
  const auto& v = j["verdicts"][0];
  EXPECT_EQ(v["kind"], "DEADLOCK") << out;
  EXPECT_EQ(v["ranks"], "0-2") << out;
  EXPECT_EQ(v["facts"]["cycle"].size(), 2u) << out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace collie
