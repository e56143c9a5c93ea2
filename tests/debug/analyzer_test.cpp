#include "debug/analyzer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "debug/flight_recorder.h"

namespace collie {
namespace {

// One rank's recorder; ops() records collectives (completed unless `pending`).
struct Rank {
  int rank;
  FlightRecorder fr;
  std::shared_ptr<GroupTrace> g = std::make_shared<GroupTrace>();
  std::vector<float> buf = std::vector<float>(1024);
  uint64_t coll = 0, p2p = 0, op = 0;
  Rank(int r, int n, size_t cap = 64, Clock* clock = nullptr) : rank(r), fr(cap, clock) {
    g->pg_id = "0";
    g->desc = "default_pg";
    g->backend = "gloo";
    g->rank = g->global_rank = r;
    for (int i = 0; i < n; ++i) g->global_ranks.push_back(i);
    fr.add_group(g);
  }
  uint64_t call(OpType t, size_t count = 1024, bool pending = false, int peer = -1,
                DType dt = DType::Float32) {
    OpCall c;
    c.type = t;
    c.input = TensorView::cpu(buf.data(), count, dt);
    c.output = c.input;
    c.root = has_root(t) ? 0 : -1;
    c.peer = peer;
    c.seq = is_p2p(t) ? ++p2p : ++coll;
    c.timeout = Millis(1000);
    const uint64_t id = fr.record(*g, ++op, c);
    g->last_enqueued_collective = coll;
    if (!pending) {
      fr.mark_completed(id, false);
      if (!is_p2p(t)) g->last_completed_collective.raise(g->completing.mine(), coll);
    } else {
      fr.mark_started(id);
    }
    return id;
  }
  // Most cases model dumps written after something went wrong (trigger "failure").
  RankDump dump(DumpTrigger t = DumpTrigger::Failure) const {
    return parse_dump(fr.dump_json(rank, "test", fr.full_snapshot(), false, t));
  }
};

Analysis run(std::vector<Rank*> ranks, int world = -1) {
  std::vector<RankDump> d;
  for (auto* r : ranks) d.push_back(r->dump());
  return analyze(d, world);
}

TEST(Analyzer, NoFindingsWhenAllAgree) {
  Rank a(0, 2), b(1, 2);
  for (auto* r : {&a, &b}) {
    r->call(OpType::AllReduce);
    r->call(OpType::Broadcast);
  }
  auto res = run({&a, &b});
  EXPECT_TRUE(res.findings.empty()) << to_text(res);
  EXPECT_NE(to_text(res).find("No problem found"), std::string::npos);
}

TEST(Analyzer, RankThatSkippedACollectiveIsNamed) {
  Rank a(0, 3), b(1, 3), c(2, 3);
  for (int i = 0; i < 3; ++i) {
    for (auto* r : {&a, &b, &c}) r->call(OpType::AllReduce, 1024, false);
  }
  a.call(OpType::AllReduce, 1024, true);
  c.call(OpType::AllReduce, 1024, true);  // rank 1 never called #4
  auto res = run({&a, &b, &c});
  ASSERT_EQ(res.culprits(), std::vector<int>{1}) << to_text(res);
  const std::string text = to_text(res);
  EXPECT_NE(text.find("Not all ranks joining collective, sequence number: 4"), std::string::npos)
      << text;
  EXPECT_NE(text.find("[1] finished collective #3, but didn't join collective #4"),
            std::string::npos)
      << text;
  auto j = nlohmann::json::parse(to_json(res));
  EXPECT_EQ(j["culprits"], "1");
}

TEST(Analyzer, TypeSizeAndDtypeMismatchNameTheCulprit) {
  Rank a(0, 3), b(1, 3), c(2, 3);
  for (auto* r : {&a, &b}) r->call(OpType::AllReduce, 1024, true);
  c.call(OpType::Broadcast, 1024, true);
  auto res = run({&a, &b, &c});
  EXPECT_EQ(res.culprits(), std::vector<int>{2});
  EXPECT_NE(to_text(res).find("Culprit rank 2; Error type: COLLECTIVE_TYPE_MISMATCH, Expected "
                              "collective type: 'all_reduce' does not match found collective "
                              "type: 'broadcast'"),
            std::string::npos)
      << to_text(res);

  Rank d(0, 3), e(1, 3), f(2, 3);
  d.call(OpType::AllReduce, 1024, true);
  e.call(OpType::AllReduce, 512, true);
  f.call(OpType::AllReduce, 1024, true);
  res = run({&d, &e, &f});
  ASSERT_FALSE(res.findings.empty());
  EXPECT_EQ(std::count_if(res.findings.begin(), res.findings.end(),
                          [](const Finding& f) { return f.kind != "STUCK"; }),
            1)
      << to_text(res);
  EXPECT_EQ(res.findings[0].kind, "SIZE_MISMATCH");
  EXPECT_EQ(res.culprits(), std::vector<int>{1});

  Rank g(0, 3), h(1, 3), i(2, 3);
  g.call(OpType::AllReduce, 8, true);
  h.call(OpType::AllReduce, 8, true);
  i.call(OpType::AllReduce, 8, true, -1, DType::Int32);
  res = run({&g, &h, &i});
  EXPECT_EQ(res.findings[0].kind, "DTYPE_MISMATCH") << to_text(res);
  EXPECT_EQ(res.culprits(), std::vector<int>{2});
}

TEST(Analyzer, MissingDumpAndWrappedRingAreEvidenceProblems) {
  Rank a(0, 3), b(1, 3, /*cap=*/2);
  for (int k = 0; k < 4; ++k) {
    a.call(OpType::AllReduce);
    b.call(OpType::AllReduce);
  }
  auto res = run({&a, &b});
  EXPECT_EQ(res.culprits(), std::vector<int>{2});
  const std::string text = to_text(res);
  EXPECT_NE(text.find("rank 2 left no flight-recorder dump"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 1's ring wrapped: it kept the last 2 of 4 ops"), std::string::npos)
      << text;
  // The wrapped ring lost seqs 1-2: that is no evidence of rank 1 skipping them.
  for (const auto& f : res.findings) EXPECT_NE(f.kind, "NOT_ALL_JOINED") << f.message;
}

TEST(Analyzer, UnmatchedSendNamesTheReceiver) {
  Rank a(0, 2), b(1, 2);
  a.call(OpType::Send, 8, false, 1);
  b.call(OpType::Recv, 8, false, 0);
  a.call(OpType::Send, 8, true, 1);
  auto res = run({&a, &b});
  ASSERT_EQ(res.culprits(), std::vector<int>{1}) << to_text(res);
  EXPECT_NE(to_text(res).find("rank 0 called send #2 to rank 1"), std::string::npos)
      << to_text(res);
}

// Live data (dumps fetched from running ranks): a snapshot that catches ranks a moment apart is
// not a hang; the same picture after stall_after_s is. Unreachable ranks are named; a wrapped
// ring is normal.
TEST(Analyzer, LiveDataSeparatesSkewFromAHangAndNamesUnreachableRanks) {
  FakeClock clock;
  Rank a(0, 4, 4, &clock), b(1, 4, 4, &clock), c(2, 4, 4, &clock);
  for (int k = 0; k < 6; ++k) {
    for (auto* r : {&a, &b, &c}) r->call(OpType::AllReduce);  // rings of 4 wrap
  }
  a.call(OpType::AllReduce, 1024, true);
  c.call(OpType::AllReduce, 1024, true);  // rank 1 has not called #7 yet
  AnalyzeOptions o;
  o.live = true;
  o.stall_after_s = 5;
  o.unreachable = {{3, "connection refused (http://127.0.0.1:1)"}};
  clock.advance(std::chrono::milliseconds(300));
  Analysis skew = analyze({a.dump(), b.dump(), c.dump()}, o);
  ASSERT_EQ(skew.findings.size(), 1u) << to_text(skew);  // only the unreachable rank
  EXPECT_EQ(skew.findings[0].kind, "UNREACHABLE");
  EXPECT_EQ(skew.world_size, 4);
  EXPECT_EQ(skew.culprits(), std::vector<int>{3});
  EXPECT_NE(to_text(skew).find("collie analyze --live: 3 of 4 ranks answered (0-2)"),
            std::string::npos)
      << to_text(skew);
  auto v = skew.verdicts();
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0].state, "ok");
  EXPECT_EQ(v[3].state, "unreachable");

  clock.advance(std::chrono::seconds(6));
  Analysis hang = analyze({a.dump(), b.dump(), c.dump()}, o);
  EXPECT_EQ(hang.culprits(), (std::vector<int>{1, 3})) << to_text(hang);
  const std::string text = to_text(hang);
  EXPECT_NE(text.find("Not all ranks joining collective, sequence number: 7\n  ranks 0, 2 "
                      "(all_reduce) joined and waited for 6.3 s; missing rank 1"),
            std::string::npos)
      << text;
  // Ranks in the same op are one line.
  EXPECT_NE(text.find("ranks 0, 2 on host " + a.dump().host +
                      " are in all_reduce #7 of group 0 (state started) for 6.3 s"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("RING_WRAPPED"), std::string::npos) << text;
  v = hang.verdicts();
  EXPECT_EQ(v[0].state, "stalled");
  EXPECT_EQ(v[1].state, "straggler");
  EXPECT_EQ(v[2].state, "stalled");
  EXPECT_EQ(v[3].state, "unreachable");
  // Rank 3 left no dump: its host is not known.
  EXPECT_EQ(hang.summary(),
            "4 of 4 ranks need attention; culprit ranks 1, 3 on host " + a.dump().host);
  auto j = to_json_value(hang);
  EXPECT_EQ(
      j["states"][0],
      nlohmann::json({{"state", "unreachable"}, {"ranks", "3"}, {"count", 1}, {"hosts", ""}}));
  EXPECT_EQ(j["states"][1]["state"], "straggler");
  EXPECT_EQ(j["states"][1]["ranks"], "1");
  EXPECT_EQ(j["states"][2]["state"], "stalled");
  EXPECT_EQ(j["states"][2]["ranks"], "0,2");
  EXPECT_EQ(j["unreachable"][0]["ranks"], "3");
}

// Rank 1 froze (it left no dump); rank 2 joined #2 and waits; rank 0 is still in #1, whose data
// from rank 1 never came. Rank 0 is blocked, not the one that failed to join #2: only the rank
// without a dump is blamed (both used to be).
TEST(Analyzer, ARankBlockedInAnEarlierOpIsNotBlamedForTheNext) {
  FakeClock clock;
  Rank a(0, 3, 16, &clock), c(2, 3, 16, &clock);
  a.call(OpType::AllReduce, 1024, true);
  c.call(OpType::AllReduce);
  c.call(OpType::AllReduce, 1024, true);
  clock.advance(std::chrono::seconds(10));
  const Analysis res = analyze({a.dump(), c.dump()}, AnalyzeOptions{});
  EXPECT_EQ(res.culprits(), std::vector<int>{1}) << to_text(res);
  EXPECT_NE(to_text(res).find("rank 0 blocked in an earlier op of this group (not blamed)"),
            std::string::npos)
      << to_text(res);
  EXPECT_EQ(res.verdicts()[0].state, "stalled") << to_text(res);
}

// A FakeClock whose wall clock can step (NTP): wall = monotonic + offset.
class SteppingClock : public FakeClock {
 public:
  int64_t wall_ns() const override { return FakeClock::wall_ns() + offset.load(); }
  std::atomic<int64_t> offset{1'700'000'000'000'000'000};
};

// POST /v1/dump on a healthy running job: the two snapshots are 8 ms apart, rank 0 has just
// entered #263 and rank 1 has just finished #262. Not a hang (it was reported as "Culprit rank
// 1"); the same picture written on a failure 30 s into the wait is one.
TEST(Analyzer, RequestedSnapshotsOfARunningJobAreNotAHang) {
  SteppingClock clock;
  Rank a(0, 2, 8, &clock), b(1, 2, 8, &clock);
  for (int k = 0; k < 262; ++k) {
    for (auto* r : {&a, &b}) r->call(OpType::AllReduce);
    clock.advance(std::chrono::microseconds(300));
  }
  a.call(OpType::AllReduce, 1024, true);
  const RankDump da = a.dump(DumpTrigger::Request);
  clock.advance(std::chrono::milliseconds(8));
  const RankDump db = b.dump(DumpTrigger::Request);
  const Analysis snap = analyze({da, db}, AnalyzeOptions{});
  EXPECT_TRUE(snap.findings.empty()) << to_text(snap);
  EXPECT_DOUBLE_EQ(snap.stall_after_s, kAutoStallRequestedS);
  EXPECT_NEAR(snap.dump_spread_ms, 8.0, 1e-6);
  EXPECT_NE(to_text(snap).find("Note: dumps taken 8.000 ms apart (rank 0 first, rank 1 last"),
            std::string::npos)
      << to_text(snap);
  clock.advance(std::chrono::seconds(30));
  const Analysis hang = analyze({a.dump(), b.dump()}, AnalyzeOptions{});
  EXPECT_EQ(hang.culprits(), std::vector<int>{1}) << to_text(hang);
  EXPECT_DOUBLE_EQ(hang.stall_after_s, 0);
}

// A rank that has not joined #N but did something else moments before its dump is behind, not
// stuck: it is not blamed, and the rank waiting in #N for 5 s is reported as stalled (never "No
// problem found").
TEST(Analyzer, ARankBehindButMovingIsNotTheCulprit) {
  FakeClock clock;
  Rank a(0, 2, 16, &clock), b(1, 2, 16, &clock);
  for (auto* r : {&a, &b}) r->call(OpType::AllReduce);
  a.call(OpType::AllReduce, 1024, true);
  clock.advance(std::chrono::seconds(5));
  b.call(OpType::Send, 16, false, 0);  // rank 1 is busy elsewhere
  clock.advance(std::chrono::milliseconds(100));
  const Analysis res =
      analyze({a.dump(DumpTrigger::Request), b.dump(DumpTrigger::Request)}, AnalyzeOptions{});
  EXPECT_TRUE(res.culprits().empty()) << to_text(res);
  const auto v = res.verdicts();
  EXPECT_EQ(v[0].state, "stalled") << to_text(res);
  EXPECT_EQ(v[1].state, "ok") << to_text(res);
  EXPECT_EQ(to_text(res).find("No problem found"), std::string::npos) << to_text(res);
  // Idle for the same 5 s instead: the culprit.
  Rank c(0, 2, 16, &clock), d(1, 2, 16, &clock);
  for (auto* r : {&c, &d}) r->call(OpType::AllReduce);
  c.call(OpType::AllReduce, 1024, true);
  clock.advance(std::chrono::seconds(5));
  const Analysis idle =
      analyze({c.dump(DumpTrigger::Request), d.dump(DumpTrigger::Request)}, AnalyzeOptions{});
  EXPECT_EQ(idle.culprits(), std::vector<int>{1}) << to_text(idle);
}

// A rank that slept past the timeout reaches #2 after the others failed it, and its last dump
// (written when its own #2 failed) shows it in #2 like everyone else: it is still the culprit,
// from the times. (DebugScenario.RankSleepsPastTheTimeout read "no culprit" this way in CI.)
// And the other direction: everyone arrives together and fails together: nobody is late.
TEST(Analyzer, ARankThatArrivedAfterTheOthersFailedTheOpIsTheCulprit) {
  FakeClock clock;
  Rank a(0, 3, 16, &clock), b(1, 3, 16, &clock), c(2, 3, 16, &clock);
  for (auto* r : {&a, &b, &c}) r->call(OpType::AllReduce);
  const uint64_t ia = a.call(OpType::AllReduce, 1024, true);
  const uint64_t ic = c.call(OpType::AllReduce, 1024, true);
  clock.advance(std::chrono::milliseconds(2500));
  a.fr.mark_completed(ia, true);
  c.fr.mark_completed(ic, true);
  clock.advance(std::chrono::milliseconds(2000));
  const uint64_t ib = b.call(OpType::AllReduce, 1024, true);  // 4.5 s late
  clock.advance(std::chrono::milliseconds(2000));
  b.fr.mark_completed(ib, true);
  const Analysis res = run({&a, &b, &c});
  EXPECT_EQ(res.culprits(), std::vector<int>{1}) << to_text(res);
  const std::string text = to_text(res);
  EXPECT_NE(text.find("rank 1 on host " + b.dump().host +
                      " reached all_reduce #2 4.5 s after the first rank, when ranks 0, 2 had "
                      "already failed it"),
            std::string::npos)
      << text;
  Rank d(0, 2, 16, &clock), e(1, 2, 16, &clock);
  const uint64_t id = d.call(OpType::AllReduce, 1024, true);
  clock.advance(std::chrono::milliseconds(1));
  const uint64_t ie = e.call(OpType::AllReduce, 1024, true);
  clock.advance(std::chrono::milliseconds(2500));
  d.fr.mark_completed(id, true);
  e.fr.mark_completed(ie, true);
  const Analysis together = run({&d, &e});
  EXPECT_TRUE(together.culprits().empty()) << to_text(together);
}

// The recorder keeps monotonic times: a wall clock that steps back 2 ms between an op and the
// dump leaves the op's age true (it used to come out negative, "not old", and a real hang read
// "No problem found").
TEST(Analyzer, AgesStayTrueWhenTheWallClockStepsBack) {
  SteppingClock clock;
  Rank a(0, 2, 8, &clock), b(1, 2, 8, &clock);
  for (auto* r : {&a, &b}) r->call(OpType::AllReduce);
  a.call(OpType::AllReduce, 1024, true);
  clock.advance(std::chrono::seconds(30));
  clock.offset -= 2'000'000;
  const RankDump da = a.dump();
  EXPECT_EQ(da.dump_time_ns - da.entries.back().time_created_ns, 30'000'000'000);
  const Analysis res = analyze({da, b.dump()}, AnalyzeOptions{});
  EXPECT_EQ(res.culprits(), std::vector<int>{1}) << to_text(res);
  EXPECT_NE(to_text(res).find("waited for 30.0 s"), std::string::npos) << to_text(res);
}

// Dumps whose entry times are after the dump time (older collie, or PyTorch, with wall-clock
// times from a clock that stepped back): ages unknown, counted as old, and said so.
TEST(Analyzer, EntriesAfterTheDumpTimeCountAsOldAndAreNoted) {
  Rank a(0, 2), b(1, 2);
  for (auto* r : {&a, &b}) r->call(OpType::AllReduce);
  a.call(OpType::AllReduce, 1024, true);
  nlohmann::json j = nlohmann::json::parse(a.fr.dump_json(0, "test"));
  j["trigger"] = "failure";
  for (auto& e : j["entries"]) e["time_created_ns"] = j["dump_time_ns"].get<int64_t>() + 2'000'000;
  const Analysis res = analyze({parse_dump(j.dump()), b.dump()}, AnalyzeOptions{});
  EXPECT_EQ(res.culprits(), std::vector<int>{1}) << to_text(res);
  EXPECT_NE(to_text(res).find("rank 0's clock stepped back: 2 op(s) recorded up to 2.000 ms"),
            std::string::npos)
      << to_text(res);
}

}  // namespace
}  // namespace collie

namespace collie {
namespace {

std::pair<int, std::string> run_cli(const std::string& args) {
  std::string out;
  FILE* p = ::popen((std::string(COLLIE_BIN) + " analyze " + args + " 2>&1").c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(AnalyzeCli, NamesTheCulpritFromADumpDirectory) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("collie_analyze_{}", ::getpid());
  fs::remove_all(dir);
  Rank a(0, 3), b(1, 3), c(2, 3);
  for (auto* r : {&a, &b, &c}) r->call(OpType::AllReduce);
  a.call(OpType::AllReduce, 1024, true);
  c.call(OpType::AllReduce, 1024, true);
  for (auto* r : {&a, &b, &c})
    r->fr.dump_to_dir(dir.string(), r->rank, "test", {}, DumpTrigger::Failure);
  auto [code, out] = run_cli(dir.string());
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("Not all ranks joining collective, sequence number: 2"), std::string::npos)
      << out;
  EXPECT_NE(out.find("Culprit rank: 1"), std::string::npos) << out;
  auto [jcode, jout] = run_cli(dir.string() + " --json");
  EXPECT_EQ(jcode, 1);
  EXPECT_EQ(nlohmann::json::parse(jout)["culprits"], "1") << jout;
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_EQ(run_cli(dir.string()).first, 2);
  fs::remove_all(dir);
}

TEST(AnalyzeCli, BadLiveArgumentsExit2WithOneLine) {
  for (const char* args : {"--live nohost", "--live 127.0.0.1:abc", "--live 127.0.0.1:99999",
                           "--live 127.0.0.1:1 --stall xyz", "--live 127.0.0.1:1 --timeout 0x"}) {
    auto [code, out] = run_cli(args);
    EXPECT_EQ(code, 2) << args << ": " << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << args << ": " << out;
  }
}

}  // namespace
}  // namespace collie
