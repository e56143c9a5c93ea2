#include "core/reduce_kernel.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/half.h"

namespace collie {

TEST(ReduceKernel, IntegerOps) {
  std::vector<int32_t> a = {1, 6, -3, 12}, b = {4, 2, 5, 10};
  auto run = [&](ReduceOp op) {
    auto acc = a;
    reduce_into(acc.data(), b.data(), acc.size(), DType::Int32, op);
    return acc;
  };
  EXPECT_EQ(run(ReduceOp::Sum), (std::vector<int32_t>{5, 8, 2, 22}));
  EXPECT_EQ(run(ReduceOp::Prod), (std::vector<int32_t>{4, 12, -15, 120}));
  EXPECT_EQ(run(ReduceOp::Min), (std::vector<int32_t>{1, 2, -3, 10}));
  EXPECT_EQ(run(ReduceOp::Max), (std::vector<int32_t>{4, 6, 5, 12}));
  EXPECT_EQ(run(ReduceOp::BAnd), (std::vector<int32_t>{0, 2, 5, 8}));
  EXPECT_EQ(run(ReduceOp::BOr), (std::vector<int32_t>{5, 6, -3, 14}));
  EXPECT_EQ(run(ReduceOp::BXor), (std::vector<int32_t>{5, 4, -8, 6}));
}

// perf's int32 prod validation multiplies 262144 by 262144 (UBSan in CI's ASan build: "signed
// integer overflow"); integer sums and products wrap as the backends' do, defined behaviour.
TEST(ReduceKernel, IntegerSumsAndProductsWrapAround) {
  std::vector<int32_t> a = {262144, INT32_MAX, INT32_MIN}, b = {262144, 1, -1};
  auto prod = a;
  reduce_into(prod.data(), b.data(), 3, DType::Int32, ReduceOp::Prod);
  EXPECT_EQ(prod, (std::vector<int32_t>{0, INT32_MAX, INT32_MIN}));  // 2^36 mod 2^32 = 0
  auto sum = a;
  reduce_into(sum.data(), b.data(), 3, DType::Int32, ReduceOp::Sum);
  EXPECT_EQ(sum, (std::vector<int32_t>{524288, INT32_MIN, INT32_MAX}));
  std::vector<int64_t> c = {INT64_MAX}, d = {2};
  reduce_into(c.data(), d.data(), 1, DType::Int64, ReduceOp::Prod);
  EXPECT_EQ(c[0], -2);
  std::vector<uint8_t> u = {200}, v = {100};  // 16-bit and narrower: no int promotion overflow
  reduce_into(u.data(), v.data(), 1, DType::UInt8, ReduceOp::Prod);
  EXPECT_EQ(u[0], static_cast<uint8_t>(20000 % 256));
}

TEST(ReduceKernel, UnsignedMinMaxAndDivide) {
  std::vector<uint8_t> a = {200, 3}, b = {100, 250};
  reduce_into(a.data(), b.data(), 2, DType::UInt8, ReduceOp::Max);
  EXPECT_EQ(a, (std::vector<uint8_t>{200, 250}));
  std::vector<int64_t> s = {9, -9};
  divide(s.data(), 2, DType::Int64, 2);
  EXPECT_EQ(s, (std::vector<int64_t>{4, -4}));
}

TEST(ReduceKernel, HalfGoesThroughFloat) {
  std::vector<Half> a = {Half::from_float(1.5f), Half::from_float(-2.0f)};
  std::vector<Half> b = {Half::from_float(2.25f), Half::from_float(8.0f)};
  reduce_into(a.data(), b.data(), 2, DType::Float16, ReduceOp::Sum);
  EXPECT_EQ(a[0].to_float(), 3.75f);
  EXPECT_EQ(a[1].to_float(), 6.0f);
  std::vector<BFloat16> c = {BFloat16::from_float(3.0f)}, d = {BFloat16::from_float(-4.0f)};
  reduce_into(c.data(), d.data(), 1, DType::BFloat16, ReduceOp::Prod);
  EXPECT_EQ(c[0].to_float(), -12.0f);
}

TEST(ReduceKernel, BitwiseOnFloatIsRejected) {
  float a = 1, b = 2;
  EXPECT_THROW(reduce_into(&a, &b, 1, DType::Float32, ReduceOp::BXor), InvalidArgument);
  Half h{}, g{};
  EXPECT_THROW(reduce_into(&h, &g, 1, DType::Float16, ReduceOp::BAnd), InvalidArgument);
}

TEST(ReduceKernel, ScaleForPreMulSum) {
  std::vector<double> v = {1.0, -3.0};
  scale(v.data(), 2, DType::Float64, 0.5);
  EXPECT_EQ(v, (std::vector<double>{0.5, -1.5}));
}

}  // namespace collie
