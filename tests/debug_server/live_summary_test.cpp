// The live-status tree's pieces without servers: the tree's shape and deadlines, summaries
// (merge, the wire format and its checks) and the verdicts read from them, at 16,384 ranks.
#include "debug_server/live_summary.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "debug_server/live_tree.h"
#include "debug_server/live_verdict.h"
#include "store/hash_store.h"

namespace collie {
namespace {

using Json = nlohmann::json;

TEST(LiveTree, SpansCoverTheWorldOnceWithFewLevels) {
  for (int world : {1, 2, 17, 18, 100, 4097, 16384}) {
    std::vector<int> seen(world, 0);
    int deepest = 0;
    std::vector<std::pair<TreeSpan, int>> stack = {{{0, world}, 0}};
    while (!stack.empty()) {
      auto [s, depth] = stack.back();
      stack.pop_back();
      ++seen[s.lo];
      deepest = std::max(deepest, depth);
      EXPECT_EQ(tree_span_of(s.lo, world), s) << world << " rank " << s.lo;
      const auto kids = tree_children(s);
      EXPECT_LE(kids.size(), static_cast<size_t>(kLiveTreeFanout));
      int at = s.lo + 1;
      for (const TreeSpan& c : kids) {
        EXPECT_EQ(c.lo, at);
        at = c.hi;
        stack.push_back({c, depth + 1});
      }
      EXPECT_EQ(at, kids.empty() ? s.lo + 1 : s.hi);
    }
    for (int r = 0; r < world; ++r) EXPECT_EQ(seen[r], 1) << "rank " << r << " of " << world;
    EXPECT_EQ(deepest, tree_height({0, world})) << world;
  }
  EXPECT_EQ(tree_height({0, 16384}), 4);
  EXPECT_EQ(tree_height({0, 17}), 1);
  EXPECT_EQ(tree_height({0, 18}), 2);
}

// W(0) = 0, W(1) = L, W(h) = W(h-1) + W(h-2) + 2L: a node that waits W(h-1) + L for a child and
// then W(h-2) + L for that child's children fits in its own W(h).
TEST(LiveTree, AnswerTimesNest) {
  const Millis l(100);
  EXPECT_EQ(tree_answer_time(0, l).count(), 0);
  EXPECT_EQ(tree_answer_time(1, l).count(), 100);
  EXPECT_EQ(tree_answer_time(2, l).count(), 300);
  EXPECT_EQ(tree_answer_time(4, l).count(), 1100);
  for (int h = 2; h < 8; ++h) {
    EXPECT_GE(tree_answer_time(h, l),
              tree_answer_time(h - 1, l) + l + tree_answer_time(h - 2, l) + l);
  }
}

LiveStatus::GroupSnapshot in_flight(uint64_t seq, double age) {
  LiveStatus::GroupSnapshot g;
  g.pg = "0";
  g.desc = "default_pg";
  g.size = 16384;
  g.last_completed_seq = seq - 1;
  g.last_completed_op = "all_reduce";
  g.inflight_ops.push_back({OpType::AllReduce, seq, false, 1024, age});
  g.since_last_progress_s = age;
  return g;
}

LiveStatus::GroupSnapshot idle_after(uint64_t seq, double idle) {
  LiveStatus::GroupSnapshot g;
  g.pg = "0";
  g.desc = "default_pg";
  g.size = 16384;
  g.last_completed_seq = seq;
  g.last_completed_op = "all_reduce";
  g.since_last_progress_s = idle;
  return g;
}

std::string host_of(int r) { return "node" + std::to_string(r / 8); }

// 16,384 ranks merged as the tree would (spans of 1,024 first): ranks 4096-4127 (hosts
// node512-node515) finished all_reduce #811 and never started #812, which the others wait in.
LiveSummary lagging_world(int world = 16384) {
  LiveSummary root = empty_summary(0, world, world);
  for (int lo = 0; lo < world; lo += 1024) {
    LiveSummary part = empty_summary(lo, std::min(world, lo + 1024), world);
    for (int r = lo; r < std::min(world, lo + 1024); ++r) {
      const bool behind = r >= 4096 && r < 4128;
      merge_summary(part, local_summary(r, world, host_of(r),
                                        {behind ? idle_after(811, 42.0) : in_flight(812, 41.9)}));
    }
    // Through the wire format, as a child's answer arrives.
    LiveSummary back;
    std::string why;
    EXPECT_TRUE(summary_from_json(Json::parse(summary_json(part).dump()), part.lo, part.hi, world,
                                  &back, &why))
        << why;
    merge_summary(root, back);
  }
  return root;
}

TEST(LiveVerdict, NamesTheLaggingSetAsRangesAndHosts) {
  const LiveSummary s = lagging_world();
  EXPECT_EQ(s.answered.count(), 16384);
  ASSERT_EQ(s.groups.size(), 1u);
  EXPECT_EQ(s.groups[0].buckets.size(), 2u);
  const LiveReport r = judge_live(s, 10);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].kind, "NOT_JOINED");
  EXPECT_EQ(r.findings[0].message,
            "group 0 (default_pg): ranks 4096-4127 on hosts node[512-515] have not joined "
            "all_reduce #812 and made no progress for 10 s; the other 16,352 are waiting in it "
            "for up to 41.9 s (look at what they are doing: /v1/stacks, py-spy)");
  EXPECT_EQ(r.culprits.str(), "4096-4127");
  EXPECT_EQ(r.groups[0],
            "group 0 (default_pg): 16,384 of 16,384 members answered; ranks 4096-4127 on hosts "
            "node[512-515] are idle after all_reduce #811 for 42.0 s; the other 16,352 are in "
            "all_reduce #812 for 41.9 s");
  // The text is a handful of lines, the JSON a few kilobytes: ranges, never a list of ranks.
  const std::string text = live_text(r, s);
  EXPECT_LT(std::count(text.begin(), text.end(), '\n'), 10) << text;
  const std::string j = live_json(r, s).dump();
  EXPECT_LT(j.size(), 20000u) << j.size();
  const Json parsed = Json::parse(j);
  EXPECT_EQ(parsed["culprits"]["ranges"], Json::parse("[[4096, 4127]]"));
  EXPECT_EQ(parsed["findings"][0]["hosts"], "node[512-515]");
}

// A healthy job caught mid-op: ranks a moment apart, nothing stalled: no finding.
TEST(LiveVerdict, HealthySkewIsNotAFinding) {
  LiveSummary s = empty_summary(0, 64, 64);
  for (int r = 0; r < 64; ++r) {
    merge_summary(s, local_summary(r, 64, host_of(r),
                                   {r % 3 == 0 ? idle_after(811, 0.001) : in_flight(812, 0.002)}));
  }
  const LiveReport r = judge_live(s, 10);
  EXPECT_TRUE(r.findings.empty()) << live_text(r, s);
  EXPECT_EQ(r.summary, "all 64 ranks in step");
}

TEST(LiveVerdict, MismatchNamesTheLessCommonOp) {
  LiveSummary s = empty_summary(0, 8, 8);
  for (int r = 0; r < 8; ++r) {
    LiveStatus::GroupSnapshot g = in_flight(5, 0.1);
    if (r == 6) g.inflight_ops[0].op = OpType::Broadcast;
    merge_summary(s, local_summary(r, 8, host_of(r), {g}));
  }
  const LiveReport r = judge_live(s, 10);
  ASSERT_EQ(r.findings.size(), 1u) << live_text(r, s);
  EXPECT_EQ(r.findings[0].kind, "COLLECTIVE_TYPE_MISMATCH");
  EXPECT_EQ(r.culprits.str(), "6");
}

TEST(LiveVerdict, MissingRanksByWhy) {
  LiveSummary s = empty_summary(0, 300, 300);
  for (int r = 0; r < 300; ++r) {
    if (r >= 17 && r < 34) continue;
    merge_summary(s, local_summary(r, 300, host_of(r), {in_flight(9, 0.5)}));
  }
  add_missing(s, "no_answer", 17, 17, "no answer by the deadline", "node2");
  add_missing(s, "no_answer", 18, 18, "no answer by the deadline", "node2");
  add_missing(s, "not_reached", 19, 33, "below rank 18, which did not answer");
  EXPECT_EQ(s.accounted(), 300);
  const LiveReport r = judge_live(s, 10);
  const std::string text = live_text(r, s);
  EXPECT_NE(text.find("UNREACHABLE: ranks 17-18 on host node2 did not answer"), std::string::npos)
      << text;
  EXPECT_NE(text.find("NOT_REACHED: ranks 19-33 were not asked"), std::string::npos) << text;
  EXPECT_EQ(r.culprits.str(), "17-18");  // the ranks not asked are not blamed
}

// Another rank's answer is checked before it counts.
TEST(LiveSummary, FromJsonRefusesWhatIsNotASpansSummary) {
  LiveSummary s = empty_summary(10, 20, 100);
  for (int r = 10; r < 20; ++r) merge_summary(s, local_summary(r, 100, "h", {in_flight(3, 1)}));
  const Json good = summary_json(s);
  LiveSummary out;
  std::string why;
  ASSERT_TRUE(summary_from_json(good, 10, 20, 100, &out, &why)) << why;
  EXPECT_EQ(out.answered.count(), 10);
  auto refused = [&](Json j, int lo, int hi, int world, const std::string& want) {
    LiveSummary o;
    std::string w;
    EXPECT_FALSE(summary_from_json(j, lo, hi, world, &o, &w)) << j.dump();
    EXPECT_NE(w.find(want), std::string::npos) << w;
  };
  refused(good, 10, 21, 100, "covers ranks");
  refused(good, 10, 20, 99, "world size");
  Json twice = good;
  twice["missing"] = Json::parse(
      R"([{"kind":"no_answer","ranks":{"n":1,"r":[[12,12]],"t":false},"example":"x","hosts":[],"hosts_t":false}])");
  refused(twice, 10, 20, 100, "counted twice");
  Json outside = good;
  outside["answered"]["r"] = Json::parse("[[10, 25]]");
  refused(outside, 10, 20, 100, "outside");
  Json short_count = good;
  short_count["answered"] = Json::parse(R"({"n":9,"r":[[10,18]],"t":false})");
  refused(short_count, 10, 20, 100, "accounts for 9 of its 10");
  Json many = good;
  many["groups"][0]["buckets"][0]["ranks"]["n"] = 11;
  refused(many, 10, 20, 100, "is not in 0..10");
  refused(Json::parse("[1,2]"), 10, 20, 100, "not an object");
}

// Many groups in one place (one per host) stay one line and one finding.
TEST(LiveVerdict, ManyGroupsCollapse) {
  const int world = 512;
  LiveSummary s = empty_summary(0, world, world);
  for (int r = 0; r < world; ++r) {
    LiveStatus::GroupSnapshot tp = in_flight(40, 30);
    tp.pg = std::to_string(1 + r / 8);
    tp.desc = "tp";
    tp.size = 8;
    merge_summary(s, local_summary(r, world, host_of(r), {in_flight(812, 30), tp}));
  }
  EXPECT_EQ(s.groups.size(), 65u);
  const LiveReport r = judge_live(s, 10);
  const std::string text = live_text(r, s);
  EXPECT_LT(std::count(text.begin(), text.end(), '\n'), 10) << text;
  EXPECT_NE(text.find("64 groups 1-64 (tp), 8 members each: all are in all_reduce #40"),
            std::string::npos)
      << text;
}

// A child that had not published when its tree node started is "not read yet" (not blamed) for
// the grace, then "no address"; once it publishes, the node's background wait reads it.
TEST(TreeAddressResolver, UnpublishedChildIsUnknownForTheGraceThenNoneThenRead) {
  auto store = std::make_shared<HashStore>();
  const auto kids = tree_children({0, 3});
  ASSERT_EQ(kids.size(), 2u);  // ranks 1 and 2, both children of rank 0
  store->set("debug_server/1", std::string_view("http://127.0.0.1:4001"));
  const Millis grace{1500};
  const auto t0 = std::chrono::steady_clock::now();
  TreeAddressResolver resolver(store, 0, 3, grace);
  auto state_of = [&](int rank) { return resolver.addresses({rank}).at(0); };
  const auto deadline = t0 + std::chrono::seconds(10);
  while (state_of(1).state != RankAddress::State::kKnown &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(Millis(10));
  EXPECT_EQ(state_of(1).url, "http://127.0.0.1:4001");
  const RankAddress early = state_of(2);
  if (std::chrono::steady_clock::now() - t0 < grace) {
    EXPECT_EQ(early.state, RankAddress::State::kUnknown) << early.why;
    EXPECT_NE(early.why.find("ask again"), std::string::npos) << early.why;
  }
  std::this_thread::sleep_until(t0 + grace + Millis(50));
  const RankAddress late = state_of(2);
  EXPECT_EQ(late.state, RankAddress::State::kNone) << late.why;
  EXPECT_NE(late.why.find("has not started"), std::string::npos) << late.why;
  store->set("debug_server/2", std::string_view("http://127.0.0.1:4002"));
  while (state_of(2).state != RankAddress::State::kKnown &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(Millis(10));
  EXPECT_EQ(state_of(2).url, "http://127.0.0.1:4002");
  resolver.stop();
}

}  // namespace
}  // namespace collie
