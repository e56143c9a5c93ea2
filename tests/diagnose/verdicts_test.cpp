// Typed verdicts from flight-recorder dumps (src/diagnose): each kind fires on the picture that
// shows it, names the right ranks, and stays quiet on the pictures that do not.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "core/clock.h"
#include "debug/flight_recorder.h"
#include "diagnose/dump_verdicts.h"

namespace collie {
namespace {

// One rank's recorder with its groups; call() records a collective (completed unless pending).
struct Rank {
  int rank;
  FakeClock* clock;
  FlightRecorder fr;
  std::map<std::string, std::shared_ptr<GroupTrace>> groups;
  std::vector<float> buf = std::vector<float>(64);
  uint64_t op = 0;
  Rank(int r, int n, FakeClock* c) : rank(r), clock(c), fr(256, c) { group("0", n); }
  GroupTrace& group(const std::string& id, int n) {
    auto& g = groups[id];
    if (!g) {
      g = std::make_shared<GroupTrace>();
      g->pg_id = id;
      g->desc = id == "0" ? "default_pg" : "pg" + id;
      g->backend = "gloo";
      g->global_rank = g->rank = rank;
      for (int i = 0; i < n; ++i) g->global_ranks.push_back(i);
      fr.add_group(g);
    }
    return *g;
  }
  uint64_t call(const std::string& pg, size_t count = 64, bool pending = false) {
    GroupTrace& g = *groups.at(pg);
    OpCall c;
    c.type = OpType::AllReduce;
    c.input = TensorView::cpu(buf.data(), count, DType::Float32);
    c.output = c.input;
    c.seq = ++g.last_enqueued_collective;
    c.timeout = Millis(1000);
    const uint64_t id = fr.record(g, ++op, c);
    fr.mark_started(id);
    if (!pending) {
      fr.mark_completed(id, false);
      g.last_completed_collective.raise(g.completing.mine(), c.seq);
    }
    return id;
  }
  RankDump dump(DumpTrigger t = DumpTrigger::Failure) const {
    return parse_dump(fr.dump_json(rank, "test", fr.full_snapshot(), false, t));
  }
};

Diagnosis run(const std::vector<RankDump>& dumps, AnalyzeOptions o = {}) {
  return diagnose(analyze(dumps, o), "flight-recorder dumps");
}

std::map<std::string, std::string> kinds(const Diagnosis& d) {
  std::map<std::string, std::string> out;
  for (const Verdict& v : d.verdicts) out[verdict_name(v.kind)] += rank_ranges(v.ranks);
  return out;
}

using Kinds = std::map<std::string, std::string>;

TEST(Verdicts, HealthyDumpsHaveNone) {
  FakeClock clock;
  Rank a(0, 3, &clock), b(1, 3, &clock), c(2, 3, &clock);
  for (int k = 0; k < 30; ++k) {
    Rank* order[] = {&a, &b, &c};
    std::rotate(order, order + k % 3, order + 3);  // the last to arrive takes turns
    for (Rank* r : order) {
      r->call("0");
      clock.advance(std::chrono::microseconds(50));
    }
  }
  const Diagnosis d = run(
      {a.dump(DumpTrigger::Request), b.dump(DumpTrigger::Request), c.dump(DumpTrigger::Request)});
  EXPECT_TRUE(d.verdicts.empty()) << to_text(d);
  EXPECT_EQ(d.first_hung_group, "");
}

// Rank 1 stopped calling collectives (its dump thread still answers): NOT_JOINED with its last op
// and how long ago; the ranks waiting for it get no verdict.
TEST(Verdicts, ARankOutsideCollectivesIsNotJoined) {
  FakeClock clock;
  Rank a(0, 3, &clock), b(1, 3, &clock), c(2, 3, &clock);
  for (Rank* r : {&a, &b, &c}) r->call("0");
  a.call("0", 64, true);
  c.call("0", 64, true);
  clock.advance(std::chrono::seconds(12));
  const Diagnosis d = run({a.dump(), b.dump(), c.dump()});
  EXPECT_EQ(kinds(d), (Kinds{{"NOT_JOINED", "1"}})) << to_text(d);
  const Verdict& v = d.verdicts[0];
  EXPECT_EQ(v.facts["last_op"], "all_reduce");
  EXPECT_EQ(v.facts["last_seq"], 1);
  EXPECT_NEAR(v.facts["idle_s"].get<double>(), 12.0, 0.01);
  EXPECT_GT(v.confidence, 0.8);
  EXPECT_FALSE(v.next_step.empty());
  EXPECT_EQ(d.first_hung_group, "0");
}

// Every rank entered #2 and it never completed: the collective itself is stuck.
TEST(Verdicts, ACollectiveEveryRankEnteredIsStuckInside) {
  FakeClock clock;
  Rank a(0, 2, &clock), b(1, 2, &clock);
  for (Rank* r : {&a, &b}) r->call("0");
  for (Rank* r : {&a, &b}) r->call("0", 64, true);
  clock.advance(std::chrono::seconds(7));
  const Diagnosis d = run({a.dump(), b.dump()});
  EXPECT_EQ(kinds(d), (Kinds{{"STUCK_IN_COLLECTIVE", "0-1"}})) << to_text(d);
  EXPECT_EQ(d.verdicts[0].facts["seq"], 2);
  EXPECT_NEAR(d.verdicts[0].facts["since_s"].get<double>(), 7.0, 0.01);
  // A rank missing from the op instead: not stuck inside, and not this verdict.
  Rank e(0, 2, &clock), f(1, 2, &clock);
  e.call("0", 64, true);
  clock.advance(std::chrono::seconds(7));
  EXPECT_EQ(kinds(run({e.dump(), f.dump()})).count("STUCK_IN_COLLECTIVE"), 0u);
}

TEST(Verdicts, AShapeTheOthersDoNotPassIsAMismatch) {
  FakeClock clock;
  Rank a(0, 3, &clock), b(1, 3, &clock), c(2, 3, &clock);
  a.call("0", 64, true);
  b.call("0", 32, true);
  c.call("0", 64, true);
  const Diagnosis d = run({a.dump(), b.dump(), c.dump()});
  EXPECT_EQ(kinds(d), (Kinds{{"MISMATCH", "1"}})) << to_text(d);
  EXPECT_EQ(d.verdicts[0].facts["field"], "input sizes");
  EXPECT_EQ(d.verdicts[0].facts["found"], "[[32]]");
  EXPECT_EQ(d.verdicts[0].facts["expected"], "[[64]]");
  EXPECT_GT(d.verdicts[0].confidence, 0.9);
}

// Ranks 0-1 entered group 1 first, ranks 2-3 group 2 first: a cycle of two groups.
TEST(Verdicts, GroupsEnteredInOppositeOrdersAreADeadlock) {
  FakeClock clock;
  std::vector<std::unique_ptr<Rank>> rs;
  for (int r = 0; r < 4; ++r) {
    rs.push_back(std::make_unique<Rank>(r, 4, &clock));
    rs[r]->group("1", 4);
    rs[r]->group("2", 4);
  }
  for (auto& r : rs) r->call(r->rank < 2 ? "1" : "2", 64, true);
  clock.advance(std::chrono::seconds(5));
  std::vector<RankDump> dumps;
  for (auto& r : rs) dumps.push_back(r->dump());
  const Diagnosis d = run(dumps);
  EXPECT_EQ(kinds(d), (Kinds{{"DEADLOCK", "0-3"}})) << to_text(d);
  ASSERT_EQ(d.verdicts[0].facts["cycle"].size(), 2u);
  EXPECT_NE(d.verdicts[0].summary.find("groups 1 and 2 were entered in conflicting orders"),
            std::string::npos)
      << d.verdicts[0].summary;
}

// Rank 2 arrives 40 ms after the others at every op of a job that does not hang; arriving last
// by a few microseconds, or at a third of the ops, is no verdict.
TEST(Verdicts, ARankLastAtMostOpsByALotIsAStraggler) {
  for (const auto& [delay_ms, share_all] : {std::pair{40, true}, {0, true}, {40, false}}) {
    FakeClock clock;
    Rank a(0, 3, &clock), b(1, 3, &clock), c(2, 3, &clock);
    for (int k = 0; k < 20; ++k) {
      Rank* order[] = {&a, &b, &c};
      // Without share_all the late one changes every op.
      if (!share_all) std::rotate(order, order + k % 3, order + 3);
      order[0]->call("0");
      clock.advance(std::chrono::microseconds(30));
      order[1]->call("0");
      clock.advance(std::chrono::milliseconds(delay_ms) + std::chrono::microseconds(30));
      order[2]->call("0");
      clock.advance(std::chrono::milliseconds(1));
    }
    const Diagnosis d = run(
        {a.dump(DumpTrigger::Request), b.dump(DumpTrigger::Request), c.dump(DumpTrigger::Request)});
    SCOPED_TRACE(fmt::format("delay {} ms, same rank late: {}", delay_ms, share_all));
    if (delay_ms > 0 && share_all) {
      EXPECT_EQ(kinds(d), (Kinds{{"STRAGGLER", "2"}})) << to_text(d);
      EXPECT_EQ(d.verdicts[0].facts["last"], 20);
      EXPECT_NEAR(d.verdicts[0].facts["median_margin_ms"].get<double>(), 40.03, 0.01);
    } else {
      EXPECT_TRUE(d.verdicts.empty()) << to_text(d);
    }
  }
}

TEST(Verdicts, NoDumpIsRankDeadAndLiveSilenceIsUnreachable) {
  FakeClock clock;
  Rank a(0, 3, &clock), b(1, 3, &clock);
  for (Rank* r : {&a, &b}) r->call("0", 64, true);
  clock.advance(std::chrono::seconds(3));
  EXPECT_EQ(kinds(run({a.dump(), b.dump()})), (Kinds{{"RANK_DEAD", "2"}}));
  AnalyzeOptions live;
  live.live = true;
  live.stall_after_s = 1;
  live.unreachable = {{2, "connection refused (http://127.0.0.1:1/v1/status)"}};
  EXPECT_EQ(kinds(run({a.dump(), b.dump()}, live)), (Kinds{{"RANK_DEAD", "2"}}));
  live.unreachable = {{2, "no answer from http://127.0.0.1:9/v1/status within 2000 ms"}};
  EXPECT_EQ(kinds(run({a.dump(), b.dump()}, live)), (Kinds{{"UNREACHABLE", "2"}}));
}

// The order: causes first.
TEST(Verdicts, CausesComeBeforeSymptomsAndJsonCarriesTheSchema) {
  Diagnosis d;
  Verdict s;
  s.kind = VerdictKind::Straggler;
  s.ranks = {3};
  Verdict m;
  m.kind = VerdictKind::Mismatch;
  m.ranks = {1, 2};
  m.confidence = 0.9;
  d.verdicts = {s, m};
  d.order();
  EXPECT_EQ(d.verdicts[0].kind, VerdictKind::Mismatch);
  const auto j = to_json_value(d);
  EXPECT_EQ(j["verdicts"][0]["kind"], "MISMATCH");
  EXPECT_EQ(j["verdicts"][0]["ranks"], "1-2");
  EXPECT_EQ(j["verdicts"][0]["rank_count"], 2);
  for (const char* k :
       {"hosts", "group", "confidence", "summary", "evidence", "next_step", "facts", "source"}) {
    EXPECT_TRUE(j["verdicts"][1].contains(k)) << k;
  }
}

}  // namespace
}  // namespace collie
