#include "debug/fingerprint.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace collie {
namespace {

Fingerprint fp(int rank, OpType op, uint64_t seq, uint64_t count = 1024) {
  Fingerprint f;
  f.rank = rank;
  f.op = op;
  f.seq = seq;
  f.has_tensor = true;
  f.count = count;
  f.shape.ndim = 1;
  f.shape.dims[0] = static_cast<int64_t>(count);
  if (has_root(op)) f.root = 0;
  return f;
}

TEST(Fingerprint, EncodeDecodeRoundTrip) {
  Fingerprint f = fp(3, OpType::AllToAll, 9, 6);
  f.has_splits = true;
  f.input_splits = {1, 2, 3};
  f.output_splits = {3, 2, 1};
  f.dtype = DType::BFloat16;
  EXPECT_EQ(Fingerprint::decode(f.encode()), f);
  EXPECT_THROW(Fingerprint::decode(Bytes{1, 2, 3}), DesyncError);
}

TEST(Fingerprint, GroupsRanksByWhatTheyCalled) {
  std::vector<std::optional<Fingerprint>> fps = {
      fp(0, OpType::AllReduce, 57), fp(1, OpType::AllReduce, 57), fp(2, OpType::Broadcast, 57),
      fp(3, OpType::AllReduce, 57)};
  auto msg = check_collective(fps, Millis(1000));
  ASSERT_TRUE(msg);
  EXPECT_EQ(*msg,
            "Detected mismatch between collectives on ranks: ranks 0, 1, 3 called all_reduce #57 "
            "(float32[1024], sum); rank 2 called broadcast #57 (float32[1024], root 0). Differs "
            "in: op type. Check that every rank makes the same calls in the same order");
}

TEST(Fingerprint, NamesShapeDtypeRootAndMissingRanks) {
  auto a = fp(0, OpType::AllReduce, 5), b = fp(1, OpType::AllReduce, 5, 512);
  auto msg = check_collective({a, b}, Millis(1000));
  ASSERT_TRUE(msg);
  EXPECT_NE(msg->find("rank 1 called all_reduce #5 (float32[512], sum). Differs in: element count"),
            std::string::npos)
      << *msg;
  b = a;
  b.rank = 1;
  b.dtype = DType::Float64;
  EXPECT_NE(check_collective({a, b}, Millis(1))->find("Differs in: dtype"), std::string::npos);
  auto r0 = fp(0, OpType::Broadcast, 5), r1 = fp(1, OpType::Broadcast, 5);
  r1.root = 1;
  EXPECT_NE(check_collective({r0, r1}, Millis(1))->find("Differs in: root"), std::string::npos);
  Fingerprint s2 = fp(1, OpType::AllReduce, 5);
  s2.shape.ndim = 2;
  s2.shape.dims[0] = 32;
  s2.shape.dims[1] = 32;
  EXPECT_NE(check_collective({a, s2}, Millis(1))->find("Differs in: shape"), std::string::npos);
  auto missing =
      check_collective({a, std::nullopt, fp(7, OpType::AllReduce, 5)}, Millis(300), {0, 5, 7});
  ASSERT_TRUE(missing);
  EXPECT_NE(missing->find("ranks 0, 7 called all_reduce #5 (float32[1024], sum); rank 5 did not "
                          "arrive within 300 ms"),
            std::string::npos)
      << *missing;
  EXPECT_FALSE(check_collective({a, fp(1, OpType::AllReduce, 5)}, Millis(1)));
}

TEST(Fingerprint, AllToAllSplitsCheckedPairwise) {
  auto a = fp(0, OpType::AllToAll, 2, 3), b = fp(1, OpType::AllToAll, 2, 3);
  a.has_splits = b.has_splits = true;
  a.input_splits = {1, 2};
  a.output_splits = {1, 5};
  b.input_splits = {4, 2};
  b.output_splits = {2, 2};
  auto msg = check_collective({a, b}, Millis(1));
  ASSERT_TRUE(msg);
  EXPECT_NE(msg->find("rank 1 sends 4 elements to rank 0, which expects 5"), std::string::npos)
      << *msg;
  b.input_splits = {5, 2};
  EXPECT_FALSE(check_collective({a, b}, Millis(1)));
}

TEST(Fingerprint, AllToAllWithSplitsMayHaveDifferentTotals) {
  // alltoallv: rank 0 sends 1 + 2, rank 1 sends 4 + 5; each pair agrees, so nothing differs
  // although the ranks' element counts (total / size) do.
  auto a = fp(0, OpType::AllToAll, 2, 1), b = fp(1, OpType::AllToAll, 2, 4);
  a.has_splits = b.has_splits = true;
  a.input_splits = {1, 2};
  a.output_splits = {1, 4};
  b.input_splits = {4, 5};
  b.output_splits = {2, 5};
  EXPECT_TRUE(differing_fields(a, b).empty());
  EXPECT_FALSE(check_collective({a, b}, Millis(1)));
  b.output_splits = {3, 5};
  auto msg = check_collective({a, b}, Millis(1));
  ASSERT_TRUE(msg);
  EXPECT_NE(msg->find("rank 0 sends 2 elements to rank 1, which expects 3"), std::string::npos)
      << *msg;
  // Without splits the counts are still compared.
  auto c = fp(0, OpType::AllToAll, 3, 2), e = fp(1, OpType::AllToAll, 3, 4);
  EXPECT_EQ(differing_fields(c, e), std::vector<std::string>{"element count"});
}

TEST(Fingerprint, P2PPairs) {
  auto s = fp(0, OpType::Send, 1, 8), r = fp(1, OpType::Recv, 1, 8);
  s.peer = 1;
  r.peer = 0;
  EXPECT_FALSE(check_p2p(s, r, 0, 1, Millis(1)));
  r.count = 4;
  EXPECT_NE(check_p2p(s, r, 0, 1, Millis(1))->find("Differs in: element count"), std::string::npos);
  auto unmatched = check_p2p(s, std::nullopt, 0, 1, Millis(250));
  ASSERT_TRUE(unmatched);
  EXPECT_NE(unmatched->find("rank 0 called send #1 to rank 1 (float32[8], tag 0) but rank 1 "
                            "posted no matching recv within 250 ms"),
            std::string::npos)
      << *unmatched;
}

}  // namespace
}  // namespace collie
