// The agreement's arithmetic: the fields hash tells apart what differing_fields tells apart, and
// the splits checksum is zero exactly when every all_to_all pair agrees, and locates the pairs.
#include "debug/agreement_math.h"

#include <gtest/gtest.h>

#include <random>

namespace collie {
namespace {

using namespace agreement;

Fingerprint fp(OpType op, uint64_t seq, uint64_t count = 64) {
  Fingerprint f;
  f.op = op;
  f.seq = seq;
  f.has_tensor = true;
  f.count = count;
  f.shape.ndim = 1;
  f.shape.dims[0] = static_cast<int64_t>(count);
  if (has_root(op)) f.root = 0;
  return f;
}

TEST(AgreementMath, FieldArithmetic) {
  EXPECT_EQ(mul_mod(kPrime - 1, kPrime - 1), 1u);  // (-1)^2
  EXPECT_EQ(add_mod(kPrime - 1, 1), 0u);
  EXPECT_EQ(sub_mod(0, 1), kPrime - 1);
  EXPECT_EQ(pow_mod(3, kPrime - 1), 1u);  // Fermat
  EXPECT_EQ(to_field(-1), kPrime - 1);
  EXPECT_EQ(to_field(static_cast<int64_t>(kPrime) + 5), 5u);
}

TEST(AgreementMath, TheHashSeesEveryFieldDifferingFieldsCompares) {
  const Fingerprint base = fp(OpType::AllReduce, 7);
  EXPECT_EQ(fields_hash(base), fields_hash(base));
  Fingerprint other_rank = base;
  other_rank.rank = 5;  // ranks are not compared
  EXPECT_EQ(fields_hash(base), fields_hash(other_rank));
  std::vector<Fingerprint> variants(6, base);
  variants[0].op = OpType::Broadcast;
  variants[1].seq = 8;
  variants[2].dtype = DType::Float64;
  variants[3].count = 65;
  variants[3].shape.dims[0] = 65;
  variants[4].shape.ndim = 2;
  variants[4].shape.dims[0] = 8;
  variants[4].shape.dims[1] = 8;
  variants[5].reduce_op = ReduceOp::Max;
  for (const auto& v : variants) {
    EXPECT_FALSE(differing_fields(base, v).empty());
    EXPECT_NE(fields_hash(base), fields_hash(v)) << describe(v);
  }
  Fingerprint b0 = fp(OpType::Broadcast, 7), b1 = b0;
  b1.root = 1;
  EXPECT_NE(fields_hash(b0), fields_hash(b1));
  // alltoallv: the ranks' counts may differ; the pairs are checked by the checksum instead.
  Fingerprint v0 = fp(OpType::AllToAll, 3, 10), v1 = fp(OpType::AllToAll, 3, 12);
  v0.has_splits = v1.has_splits = true;
  EXPECT_EQ(fields_hash(v0), fields_hash(v1));
}

// Random alltoallv splits for n ranks where every pair agrees: in[s][t] == out[t][s].
std::pair<std::vector<std::vector<int64_t>>, std::vector<std::vector<int64_t>>> consistent(
    int n, std::mt19937_64& rng) {
  std::vector<std::vector<int64_t>> in(n, std::vector<int64_t>(n)), out = in;
  for (int s = 0; s < n; ++s) {
    for (int t = 0; t < n; ++t) {
      in[s][t] = static_cast<int64_t>(rng() % 1000);
      out[t][s] = in[s][t];
    }
  }
  return {in, out};
}

uint64_t total(const Fingerprint& f, int n, const std::vector<std::vector<int64_t>>& in,
               const std::vector<std::vector<int64_t>>& out) {
  uint64_t sum = 0;
  for (int r = 0; r < n; ++r) sum = add_mod(sum, splits_term(f, r, n, in[r], out[r]));
  return sum;
}

TEST(AgreementMath, TheSplitsChecksumIsZeroExactlyWhenEveryPairAgrees) {
  std::mt19937_64 rng(11);
  for (int n : {1, 2, 7, 64}) {
    for (uint64_t seq = 1; seq <= 5; ++seq) {
      const Fingerprint f = fp(OpType::AllToAll, seq);
      auto [in, out] = consistent(n, rng);
      EXPECT_EQ(total(f, n, in, out), 0u) << "n " << n;
      // One pair off by one; then the same pair's two sides swapped with another pair.
      const int s = static_cast<int>(rng() % n), t = static_cast<int>(rng() % n);
      in[s][t] += 1;
      EXPECT_NE(total(f, n, in, out), 0u) << "n " << n;
      in[s][t] -= 1;
      if (n > 1) {
        std::swap(out[t][s], out[(t + 1) % n][s]);
        const bool same = out[t][s] == out[(t + 1) % n][s];
        EXPECT_EQ(total(f, n, in, out) == 0, same) << "n " << n;
      }
    }
  }
  // Ranks without splits send and expect their count from every rank.
  const int n = 5;
  Fingerprint f = fp(OpType::AllToAll, 9, 6);
  std::vector<std::vector<int64_t>> none(n);
  EXPECT_EQ(total(f, n, none, none), 0u);
  std::vector<std::vector<int64_t>> in = none, out = none;
  in[2] = std::vector<int64_t>(n, 6);  // rank 2 spells it out: the same
  out[4] = std::vector<int64_t>(n, 6);
  EXPECT_EQ(total(f, n, in, out), 0u);
  out[4][1] = 5;
  EXPECT_NE(total(f, n, in, out), 0u);
  // Other ops contribute nothing.
  EXPECT_EQ(splits_term(fp(OpType::AllReduce, 1), 3, 8, {}, {}), 0u);
}

TEST(AgreementMath, LocateNamesTheSendersAndReceiversOfThePairsThatDiffer) {
  std::mt19937_64 rng(5);
  const int n = 64;
  const Fingerprint f = fp(OpType::AllToAll, 42);
  auto [in, out] = consistent(n, rng);
  in[3][17] += 2;  // rank 3 sends rank 17 more than it expects
  out[40][9] = 0;  // rank 40 expects nothing from rank 9
  in[9][40] = 5;
  std::vector<uint64_t> v(2 * n, 0);
  for (int r = 0; r < n; ++r) splits_locate(f, r, n, in[r], out[r], v.data());
  std::vector<int> senders, receivers;
  for (int i = 0; i < n; ++i) {
    if (v[i]) senders.push_back(i);
    if (v[n + i]) receivers.push_back(i);
  }
  EXPECT_EQ(senders, (std::vector<int>{3, 9}));
  EXPECT_EQ(receivers, (std::vector<int>{17, 40}));
}

TEST(AgreementMath, SummariesCombineToMinMaxSumAndCount) {
  Summary a = summary_of(fp(OpType::AllReduce, 1), 0, 3, {}, {});
  Summary b = summary_of(fp(OpType::AllReduce, 1), 1, 3, {}, {});
  Summary c = summary_of(fp(OpType::AllReduce, 1, 8), 2, 3, {}, {});
  auto fold = [](Summary x, const Summary& y) {
    combine_summaries(reinterpret_cast<uint8_t*>(&x), reinterpret_cast<const uint8_t*>(&y),
                      sizeof(x));
    return x;
  };
  EXPECT_TRUE(fold(a, b).agreed(2));
  EXPECT_FALSE(fold(a, b).agreed(3));  // a rank short
  EXPECT_FALSE(fold(fold(a, b), c).agreed(3));
  EXPECT_TRUE(fold(fold(a, b), summary_of(fp(OpType::AllReduce, 1), 2, 3, {}, {})).agreed(3));
}

}  // namespace
}  // namespace collie
