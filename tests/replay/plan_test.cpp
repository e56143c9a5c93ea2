// build_plan on dumps written here (collie's JSON layout, read by parse_dump as the analyzer
// reads files): what is matched and replayed, what is left out and said, what is assumed, and
// what is refused in one line. Also the all_to_all splits made up from totals and --ranks.
#include "replay/plan.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <numeric>

#include "core/error.h"
#include "replay/recorded_op.h"
#include "replay/schedule.h"
#include "replay/splits.h"
#include "support/refusal.h"

namespace collie::replay {
namespace {

using nlohmann::json;

json entry(const std::string& pg, const std::string& op, uint64_t seq, json in, json out = nullptr,
           const std::string& dtype = "float32") {
  json e = {{"pg_id", pg},
            {"profiling_name", "gloo:" + op},
            {"state", "completed"},
            {"collective_seq_id", seq},
            {"input_sizes", in},
            {"input_dtypes", in.empty() ? json::array() : json::array({dtype})},
            {"output_sizes", out.is_null() ? in : out},
            {"output_dtypes", json::array({dtype})},
            {"duration_ms", 0.5}};
  return e;
}

json p2p(const std::string& pg, const std::string& op, int peer, json in) {
  json e = entry(pg, op, 0, in);
  e["is_p2p"] = true;
  e["peer"] = peer;
  e["p2p_seq_id"] = 1;
  return e;
}

struct Dumps {
  int world;
  json groups = json::object();
  std::vector<std::vector<json>> entries;
  std::vector<bool> wrapped;
  explicit Dumps(int n) : world(n), entries(n), wrapped(n, false) {
    std::vector<int> all(n);
    std::iota(all.begin(), all.end(), 0);
    groups["0"] = {{"desc", "default_pg"}, {"ranks", all}};
  }
  // Every rank records the same entry.
  void all(const json& e) {
    for (auto& v : entries) v.push_back(e);
  }
  std::vector<RankDump> parse(std::vector<int> ranks = {}) const {
    if (ranks.empty()) {
      ranks.resize(world);
      std::iota(ranks.begin(), ranks.end(), 0);
    }
    std::vector<RankDump> out;
    for (int r : ranks) {
      json d = {{"rank", r},
                {"world_size", world},
                {"pg_config", groups},
                {"entries", entries[r]},
                {"wrapped", static_cast<bool>(wrapped[r])}};
      out.push_back(parse_dump(d.dump()));
    }
    return out;
  }
};

PlanOptions world(int n) {
  PlanOptions o;
  o.world = n;
  return o;
}

std::string notes(const ReplayPlan& p) { return json(p.notes).dump(); }

using testing::refusal;

TEST(ReplayPlan, CollectivesEveryMemberRecordedAreReplayedTheRestIsSaid) {
  Dumps d(3);
  d.all(entry("0", "all_reduce", 1, {{4, 4}}));
  d.all(entry("0", "_allgather_base", 2, {{8}}, {{24}}));
  // #3: rank 2's ring wrapped past it... no: rank 2 never got there (a hang).
  d.entries[0].push_back(entry("0", "broadcast", 3, {{5}}));
  d.entries[1].push_back(entry("0", "broadcast", 3, {{5}}));
  // #4 recorded by all, as different ops: a desync, not replayed.
  d.entries[0].push_back(entry("0", "all_reduce", 4, {{2}}));
  d.entries[1].push_back(entry("0", "all_reduce", 4, {{2}}));
  d.entries[2].push_back(entry("0", "broadcast", 4, {{2}}));
  d.all(entry("0", "coalesced", 5, {{1}}));
  d.all(entry("0", "all_reduce", 6, {{3}}, nullptr, "Bool"));
  json unsized = entry("0", "all_reduce", 7, json::array());
  unsized.erase("output_dtypes");
  d.all(unsized);
  const ReplayPlan p = build_plan(d.parse(), world(3));
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].recorded, "all_reduce");
  EXPECT_EQ(p.calls[0].count, 16);
  EXPECT_EQ(p.calls[0].bytes, 64);
  EXPECT_EQ(p.calls[1].kind, "all_gather");
  EXPECT_EQ(p.calls[1].count, 8);
  EXPECT_EQ(p.calls[1].bytes, 8 * 3 * 4);
  for (const auto& ops : p.ranks) {
    ASSERT_EQ(ops.size(), 2u);
    EXPECT_EQ(ops[0].in_count, 16u);
    EXPECT_EQ(ops[1].in_count, 8u);
    EXPECT_EQ(ops[1].out_count, 24u);
    EXPECT_EQ(ops[0].recorded_ms, 0.5);
  }
  const std::string n = notes(p);
  EXPECT_NE(n.find("1 op: not recorded by every member of its group (a ring that wrapped, or a "
                   "rank that never got there) (first: group 0 broadcast #3, not by rank 2)"),
            std::string::npos)
      << n;
  EXPECT_NE(n.find("members recorded different ops (first: group 0 all_reduce #4)"),
            std::string::npos)
      << n;
  EXPECT_NE(n.find("3 ops: coalescing marker 'coalesced'"), std::string::npos) << n;
  EXPECT_NE(n.find("3 ops: dtype 'Bool' has no collie equivalent"), std::string::npos) << n;
  EXPECT_NE(n.find("3 ops: no sizes recorded (first: rank 0 entry 6 (gloo:all_reduce))"),
            std::string::npos)
      << n;
}

TEST(ReplayPlan, RootsReduceOpsAndUnevenAllToAll) {
  Dumps d(4);
  json red = entry("0", "reduce", 1, {{6}});
  red["root"] = 2;
  red["reduce_op"] = "max";
  d.all(red);
  // all_to_all: ranks send 3, 4, 5, 3 and receive 3, 4, 5, 3 elements (uneven, with zeros).
  const int64_t totals[] = {3, 4, 5, 3};
  for (int r = 0; r < 4; ++r)
    d.entries[r].push_back(entry("0", "all_to_all", 2, {{totals[r]}}, {{totals[r]}}));
  // Even all_to_all.
  d.all(entry("0", "all_to_all_single", 3, {{8}}, {{8}}));
  const ReplayPlan p = build_plan(d.parse(), world(4));
  ASSERT_EQ(p.calls.size(), 3u);
  EXPECT_EQ(p.calls[0].root, 2);
  EXPECT_EQ(p.calls[0].reduce_op, ReduceOp::Max);
  EXPECT_EQ(p.calls[1].kind, "alltoallv");
  EXPECT_TRUE(p.calls[1].approximate);
  EXPECT_EQ(p.calls[1].bytes, 5 * 4);
  for (int r = 0; r < 4; ++r) {
    const PlanOp& op = p.ranks[r][1];
    EXPECT_EQ(std::accumulate(op.input_splits.begin(), op.input_splits.end(), int64_t{0}),
              totals[r]);
    EXPECT_EQ(std::accumulate(op.output_splits.begin(), op.output_splits.end(), int64_t{0}),
              totals[r]);
    for (int j = 0; j < 4; ++j)  // what r sends j is what j expects from r
      EXPECT_EQ(op.input_splits[j], p.ranks[j][1].output_splits[r]) << r << "->" << j;
  }
  EXPECT_EQ(p.calls[2].kind, "alltoall");
  EXPECT_EQ(p.calls[2].count, 2);
  EXPECT_FALSE(p.calls[2].approximate);
  EXPECT_TRUE(p.ranks[0][2].input_splits.empty());
}

TEST(ReplayPlan, SendsAndRecvsPairUpInOrderAndAlignTheNewestWhenARingWrapped) {
  Dumps d(2);
  d.entries[0] = {p2p("0", "send 0->1", 1, {{10}}), p2p("0", "send 0->1", 1, {{20}}),
                  p2p("0", "recv 0<-1", 1, {{30}})};
  d.entries[1] = {p2p("0", "recv 1<-0", 0, {{10}}), p2p("0", "recv 1<-0", 0, {{20}}),
                  p2p("0", "send 1->0", 0, {{30}})};
  ReplayPlan p = build_plan(d.parse(), world(2));
  ASSERT_EQ(p.calls.size(), 3u);
  EXPECT_TRUE(p.notes.empty()) << notes(p);
  ASSERT_EQ(p.ranks[0].size(), 3u);
  EXPECT_EQ(p.ranks[0][0].type, OpType::Send);
  EXPECT_EQ(p.ranks[0][0].in_count, 10u);
  EXPECT_EQ(p.ranks[0][2].type, OpType::Recv);
  EXPECT_EQ(p.ranks[0][2].peer, 1);
  // Rank 1's ring wrapped: its first recv is gone. The newest sends pair with its recvs.
  d.entries[1].erase(d.entries[1].begin());
  d.wrapped[1] = true;
  p = build_plan(d.parse(), world(2));
  ASSERT_EQ(p.calls.size(), 2u) << notes(p);
  EXPECT_EQ(p.ranks[0][0].in_count, 20u);  // entry 1: the second send
  EXPECT_EQ(p.ranks[0][0].entry, 1u);
  EXPECT_NE(notes(p).find("send or recv without its pair in the peer's dump (first: group 0 rank "
                          "0 -> rank 1: 2 sends, 1 recvs)"),
            std::string::npos)
      << notes(p);
  // Sizes that differ are not a pair.
  d.entries[1][0]["input_sizes"] = json{{21}};
  p = build_plan(d.parse(), world(2));
  EXPECT_NE(notes(p).find("send and recv of different sizes or dtypes"), std::string::npos);
}

TEST(ReplayPlan, ChosenRanksPlayTheGroupsInsideThem) {
  Dumps d(4);
  d.groups["1"] = {{"desc", "tp"}, {"ranks", {2, 3}}};
  d.groups["2"] = {{"desc", "tp"}, {"ranks", {0, 1}}};
  d.all(entry("0", "all_reduce", 1, {{4}}));
  for (int r : {2, 3}) d.entries[r].push_back(entry("1", "all_reduce", 1, {{9}}));
  PlanOptions o = world(2);
  o.ranks = {3, 2};  // replay rank 0 plays dump rank 3
  const ReplayPlan p = build_plan(d.parse({2, 3}), o);
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(p.groups[0].pg_id, "1");
  EXPECT_EQ(p.groups[0].replay_ranks, (std::vector<int>{1, 0}));
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].count, 9);
  EXPECT_NE(notes(p).find("group 0 'default_pg' (ranks 0-3) is not replayed: ranks 0, 1 are not"),
            std::string::npos)
      << notes(p);
  EXPECT_NE(refusal([&] {
              build_plan(d.parse({2, 3}), world(2));
            })
                .find("the dumps are of 4 ranks and the replay has 2: run it on 4 ranks (-np "
                      "4), or pick 2 of the dumps' ranks with --ranks (e.g. --ranks 0-1)"),
            std::string::npos);
  o.ranks = {0, 2};
  EXPECT_NE(refusal([&] {
              build_plan(d.parse({2, 3}), o);
            }).find("no dump of rank 0"),
            std::string::npos);
}

TEST(ReplayPlan, RefusesWhatCannotBeReplayedInOneLine) {
  Dumps d(2);
  d.all(entry("0", "all_reduce", 1, {{1 << 20}}));
  PlanOptions o = world(2);
  o.max_bytes = 1 << 20;
  EXPECT_NE(refusal([&] { build_plan(d.parse(), o); })
                .find("rank 0 entry 0 (gloo:all_reduce) records 4194304 bytes of buffers, more "
                      "than the 1048576 a replayed op may have (--max-bytes)"),
            std::string::npos);
  // A size no buffer has, or sizes that are not shapes: hostile.
  Dumps huge(2);
  huge.all(entry("0", "all_reduce", 1, {{int64_t{1} << 40, int64_t{1} << 40}}));
  EXPECT_NE(refusal([&] { build_plan(huge.parse(), world(2)); })
                .find("rank 0 entry 0 (gloo:all_reduce): sizes '[[1099511627776,1099511627776]]' "
                      "/ '[[1099511627776,1099511627776]]' are not lists of shapes of at most "
                      "2^50 elements"),
            std::string::npos)
      << refusal([&] { build_plan(huge.parse(), world(2)); });
  Dumps bent(2);
  bent.all(entry("0", "all_reduce", 1, {{4, -2}}));
  EXPECT_NE(refusal([&] { build_plan(bent.parse(), world(2)); }).find("are not lists of shapes"),
            std::string::npos);
  // Two dumps that disagree on a group's members: neither view is replayed.
  Dumps other(2);
  other.all(entry("0", "all_reduce", 1, {{4}}));
  std::vector<RankDump> mixed = other.parse();
  mixed[1].groups["0"].ranks = {1, 0};
  EXPECT_NE(refusal([&] { build_plan(mixed, world(2)); })
                .find("nothing in the dumps can be replayed: group 0 'default_pg' (ranks 0, 1) "
                      "is not replayed: the dump of rank 1 gives it other members"),
            std::string::npos)
      << refusal([&] { build_plan(mixed, world(2)); });
  EXPECT_NE(refusal([&] {
              build_plan(Dumps(2).parse(), world(2));
            }).find("nothing in the dumps can be replayed: they record no collective"),
            std::string::npos);
}

// Issue 40: 48 sends of 64 MiB between two collectives were replayed with one zero-filled
// buffer of 3 GiB under --max-bytes 64M. What a rank holds at once is checked, not each op.
TEST(ReplayPlan, WhatARankHoldsAtOnceIsCheckedAgainstMaxBytes) {
  Dumps d(2);
  const int64_t floats = int64_t{16} << 20;  // 64 MiB of float32
  for (int k = 0; k < 48; ++k) {
    d.entries[0].push_back(p2p("0", "send 0->1", 1, {{floats}}));
    d.entries[1].push_back(p2p("0", "recv 1<-0", 0, {{floats}}));
  }
  d.all(entry("0", "all_reduce", 1, {{floats}}));
  PlanOptions o = world(2);
  o.max_bytes = int64_t{64} << 20;
  EXPECT_NE(refusal([&] { build_plan(d.parse(), o); })
                .find("rank 0: its 48 send/recv ops from entry 0 to entry 47 (posted together "
                      "between two collectives) hold 3221225472 bytes of buffers at once, more "
                      "than the 67108864 a replayed rank may hold (--max-bytes)"),
            std::string::npos)
      << refusal([&] { build_plan(d.parse(), o); });
  // A collective's input and output are held together: all_gather of 24 MiB from each of 2
  // ranks holds 24 MiB in and 48 MiB out, each under the limit.
  Dumps g(2);
  g.all(entry("0", "all_gather", 1, {{6 << 20}}, {{12 << 20}}));
  EXPECT_NE(refusal([&] { build_plan(g.parse(), o); })
                .find("rank 0: entry 0 (all_gather #1 of group 0 'default_pg', float32 x "
                      "6291456 (50331648 B)) holds in its input and output 75497472 bytes"),
            std::string::npos)
      << refusal([&] { build_plan(g.parse(), o); });
  o.max_bytes = int64_t{4} << 30;
  const ReplayPlan p = build_plan(d.parse(), o);
  EXPECT_EQ(peak_of(p, 0).bytes, uint64_t{48} << 26);
  EXPECT_EQ(steps_of(p.ranks[0]).size(), 2u);
}

// Issue 40: ranks that recorded two groups' collectives in opposite orders were replayed and
// blocked until the op timeout. The plan names the ranks that wait for each other.
TEST(ReplayPlan, RanksThatRanTwoGroupsInOppositeOrdersAreRefusedByName) {
  Dumps d(2);
  d.groups["1"] = {{"desc", "a"}, {"ranks", {0, 1}}};
  d.groups["2"] = {{"desc", "b"}, {"ranks", {0, 1}}};
  d.entries[0] = {entry("1", "all_reduce", 1, {{4}}), entry("2", "all_reduce", 1, {{4}})};
  d.entries[1] = {entry("2", "all_reduce", 1, {{4}}), entry("1", "all_reduce", 1, {{4}})};
  EXPECT_EQ(refusal([&] { build_plan(d.parse(), world(2)); }),
            "the dumps' ranks ran their ops in orders a replay cannot follow (it waits for each "
            "collective before the next op): rank 0 waits in all_reduce #1 of group 1 (its entry "
            "0) for rank 1, which waits in all_reduce #1 of group 2 (its entry 0) for rank 0; "
            "replay fewer ranks (--ranks) or groups");
  // A send posted before a collective its peer runs first: the send waits for the recv the
  // peer posts only after the collective.
  Dumps p(2);
  p.entries[0] = {p2p("0", "send 0->1", 1, {{4}}), entry("0", "all_reduce", 1, {{4}})};
  p.entries[1] = {entry("0", "all_reduce", 1, {{4}}), p2p("0", "recv 1<-0", 0, {{4}})};
  EXPECT_NE(refusal([&] { build_plan(p.parse(), world(2)); })
                .find("rank 0 waits in send/recv 0->1 #1 of group 0 (its entry 0) for rank 1, "
                      "which waits in all_reduce #1 of group 0 (its entry 0) for rank 0"),
            std::string::npos)
      << refusal([&] { build_plan(p.parse(), world(2)); });
  // The same groups in the same order on both ranks, and sends and recvs posted together in
  // either order, are fine.
  d.entries[1] = d.entries[0];
  EXPECT_NO_THROW(build_plan(d.parse(), world(2)));
  p.entries[1] = {p2p("0", "recv 1<-0", 0, {{4}}), entry("0", "all_reduce", 1, {{4}})};
  EXPECT_NO_THROW(build_plan(p.parse(), world(2)));
}

// Issue 40: a group listing a rank twice was refused by new_group once the ranks ran, naming no
// dump.
TEST(ReplayPlan, AGroupThatListsARankTwiceIsRefusedNamingTheDump) {
  Dumps d(2);
  d.all(entry("0", "all_reduce", 1, {{4}}));
  std::vector<RankDump> dumps = d.parse();
  dumps[1].groups["0"].ranks = {0, 1, 1};
  EXPECT_EQ(refusal([&] { build_plan(dumps, world(2)); }),
            "the dump of rank 1 lists rank 1 twice in the members of group '0' 'default_pg' "
            "('0, 1, 1'): not a group a job can make");
}

TEST(ReplayPlan, OneNameForDifferentMembersOnDifferentRanksIsSeveralGroups) {
  // As PyTorch's fixtures build them: every rank has a group "1" of its own.
  Dumps d(2);
  std::vector<RankDump> dumps;
  for (int r = 0; r < 2; ++r) {
    d.groups["1"] = {{"desc", "sub_pg"}, {"ranks", {r}}};
    d.entries[r] = {entry("0", "all_reduce", 1, {{4}}), entry("1", "all_reduce", 1, {{3 + r}})};
    dumps.push_back(d.parse({r})[0]);
  }
  const ReplayPlan p = build_plan(dumps, world(2));
  ASSERT_EQ(p.groups.size(), 3u);
  EXPECT_EQ(p.groups[1].replay_ranks, std::vector<int>{0});
  EXPECT_EQ(p.groups[2].replay_ranks, std::vector<int>{1});
  ASSERT_EQ(p.calls.size(), 3u) << notes(p);
  EXPECT_EQ(p.ranks[1][1].in_count, 4u);
}

TEST(ReplayPlan, AnEntryOfARankItsGroupDoesNotNameIsSaidNotReplayed) {
  // Found by fuzz_torch_dump: rank 1 records a collective (and a send) in group "1", whose member
  // list on every dump is rank 0 alone. It was matched as group rank -1 (out of bounds).
  Dumps d(2);
  d.groups["1"] = {{"desc", "sub_pg"}, {"ranks", {0}}};
  d.all(entry("0", "all_reduce", 1, {{4}}));
  d.entries[0].push_back(entry("1", "all_reduce", 1, {{2}}));
  d.entries[1].push_back(entry("1", "all_reduce", 1, {{2}}));
  d.entries[1].push_back(p2p("1", "send", 0, {{2}}));
  const ReplayPlan p = build_plan(d.parse(), world(2));
  ASSERT_EQ(p.calls.size(), 2u) << notes(p);
  EXPECT_EQ(p.ranks[0].size(), 2u);
  EXPECT_EQ(p.ranks[1].size(), 1u);
  EXPECT_NE(notes(p).find("2 ops: recorded by a rank its group's member list does not name "
                          "(first: rank 1 entry 1 (gloo:all_reduce))"),
            std::string::npos)
      << notes(p);
}

TEST(ReplayPlan, ADtypeFromTheDumpIsPrintedEscaped) {
  // Found by fuzz_torch_dump: the dtype is read back out of its JSON text, where "\u0001" is an
  // escape; the note printed the raw control byte to the terminal.
  Dumps d(2);
  d.all(entry("0", "all_reduce", 1, {{4}}));
  d.all(entry("0", "all_reduce", 2, {{4}}, nullptr, "f\x01\x1b[2J"));
  const ReplayPlan p = build_plan(d.parse(), world(2));
  ASSERT_FALSE(p.notes.empty());
  EXPECT_NE(p.notes[0].find("dtype 'f\\x01\\x1b[2J' has no collie equivalent"), std::string::npos)
      << p.notes[0];
  for (const std::string& n : p.notes) EXPECT_EQ(n.find('\x01'), std::string::npos) << n;
}

TEST(ReplayPlan, RankListsAndTheSameFingerprintForTheSamePlan) {
  EXPECT_EQ(parse_rank_list("0-2,5,7-7", "--ranks"), (std::vector<int>{0, 1, 2, 5, 7}));
  for (const char* bad : {"", "3-1", "a", "1,,2", "-1", "1000000"})  // ranks < 1,000,000
    EXPECT_NE(refusal([&] { parse_rank_list(bad, "--ranks"); }).find("--ranks"), std::string::npos)
        << bad;
  Dumps d(2);
  d.all(entry("0", "all_reduce", 1, {{4}}));
  const uint64_t f = build_plan(d.parse(), world(2)).fingerprint();
  EXPECT_EQ(build_plan(d.parse(), world(2)).fingerprint(), f);
  d.all(entry("0", "all_reduce", 2, {{5}}));
  EXPECT_NE(build_plan(d.parse(), world(2)).fingerprint(), f);
}

TEST(ReplaySplits, EveryRankGetsItsTotalsEvenWithZeros) {
  const std::vector<std::vector<int64_t>> in = {{3, 4, 5, 3}, {0, 7, 0, 1}, {10, 0, 0, 0}};
  const std::vector<std::vector<int64_t>> out = {{3, 4, 5, 3}, {4, 0, 4, 0}, {0, 0, 0, 10}};
  for (size_t c = 0; c < in.size(); ++c) {
    const auto m = splits_for_totals(in[c], out[c]);
    ASSERT_TRUE(m) << c;
    for (size_t i = 0; i < in[c].size(); ++i) {
      int64_t row = 0, col = 0;
      for (size_t j = 0; j < in[c].size(); ++j) {
        EXPECT_GE((*m)[i][j], 0);
        row += (*m)[i][j];
        col += (*m)[j][i];
      }
      EXPECT_EQ(row, in[c][i]) << c;
      EXPECT_EQ(col, out[c][i]) << c;
    }
  }
  EXPECT_FALSE(splits_for_totals({1, 2}, {1, 1}));
  EXPECT_FALSE(splits_for_totals({-1, 2}, {0, 1}));
}

TEST(ReplayRecordedOp, TorchNamesAreCollieVerbs) {
  std::string why;
  EXPECT_EQ(verb_of("_allgather_base", &why), OpType::AllGather);
  EXPECT_EQ(verb_of("all_gather_into_tensor_coalesced", &why), OpType::AllGather);
  EXPECT_EQ(verb_of("_reduce_scatter_base", &why), OpType::ReduceScatter);
  EXPECT_EQ(verb_of("all_to_all_single", &why), OpType::AllToAll);
  EXPECT_EQ(verb_of("all_reduce_barrier", &why), OpType::Barrier);
  EXPECT_EQ(verb_of("_broadcast_oop", &why), OpType::Broadcast);
  EXPECT_FALSE(verb_of("all_gather_v", &why));
  EXPECT_NE(why.find("per-rank sizes"), std::string::npos);
  EXPECT_FALSE(verb_of("split", &why));
  EXPECT_NE(why.find("makes a group"), std::string::npos);
  EXPECT_FALSE(verb_of("frobnicate", &why));
  EXPECT_EQ(why, "unknown op 'frobnicate'");
}

}  // namespace
}  // namespace collie::replay
