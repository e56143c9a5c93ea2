#include "core/dtype.h"

#include <gtest/gtest.h>

#include "core/dtype_visit.h"
#include "core/half.h"
#include "core/reduce_op.h"

namespace collie {

TEST(DType, SizesAndNamesRoundTrip) {
  for (DType d : kAllDTypes) {
    EXPECT_EQ(parse_dtype(dtype_name(d)), d);
    EXPECT_EQ(parse_dtype(nccl_tests_name(d)), d);
  }
  EXPECT_EQ(dtype_size(DType::BFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::UInt64), 8u);
  EXPECT_EQ(nccl_tests_name(DType::Float32), "float");
  EXPECT_EQ(nccl_tests_name(DType::Float16), "half");
  EXPECT_EQ(parse_dtype("bf16"), DType::BFloat16);
  EXPECT_FALSE(parse_dtype("float128").has_value());
}

TEST(ReduceOp, NamesRoundTrip) {
  for (ReduceOp op : kAllReduceOps) EXPECT_EQ(parse_reduce_op(reduce_op_name(op)), op);
  EXPECT_FALSE(parse_reduce_op("median").has_value());
  EXPECT_TRUE(is_bitwise(ReduceOp::BXor));
  EXPECT_FALSE(is_bitwise(ReduceOp::Max));
}

TEST(DType, VisitGivesEachDTypeItsElementType) {
  for (DType d : kAllDTypes) {
    const size_t size =
        visit_dtype(d, [](auto tag) { return sizeof(typename decltype(tag)::type); });
    EXPECT_EQ(size, d == DType::Float16 || d == DType::BFloat16                      ? 2u
                    : d == DType::Int8 || d == DType::UInt8                          ? 1u
                    : d == DType::Int32 || d == DType::UInt32 || d == DType::Float32 ? 4u
                                                                                     : 8u)
        << dtype_name(d);
    const bool floating = visit_dtype(d, [](auto tag) {
      using T = typename decltype(tag)::type;
      return is_half_type_v<T> || std::is_floating_point_v<T>;
    });
    EXPECT_EQ(floating, is_floating(d)) << dtype_name(d);
    const bool is_signed_type = visit_dtype(d, [](auto tag) {
      using T = typename decltype(tag)::type;
      return is_half_type_v<T> || std::is_signed_v<T>;
    });
    EXPECT_EQ(is_signed_type, is_signed(d)) << dtype_name(d);
  }
  EXPECT_TRUE(visit_dtype(DType::BFloat16, [](auto tag) {
    return std::is_same_v<typename decltype(tag)::type, BFloat16>;
  }));
  EXPECT_THROW(visit_dtype(static_cast<DType>(200), [](auto) { return 0; }), InvalidArgument);
  EXPECT_EQ(dtype_size(static_cast<DType>(200)), 0u);
}

TEST(Half, ExactValuesRoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 0.000061035156f, 1024.0f, -0.5f}) {
    EXPECT_EQ(Half::from_float(f).to_float(), f) << f;
  }
  // Values with at most 8 significant bits are exact in bfloat16 (its range is float's).
  for (float f : {0.0f, 1.0f, -2.5f, 0.000061035156f, 1024.0f, -0.5f, 65536.0f, 1.5f, -255.0f}) {
    EXPECT_EQ(BFloat16::from_float(f).to_float(), f) << f;
  }
  // 65504 needs 11 significant bits: it rounds to the nearest bfloat16 (65536).
  EXPECT_EQ(BFloat16::from_float(65504.0f).to_float(), 65536.0f);
  EXPECT_EQ(Half::from_float(1.0f).bits, 0x3c00);
  EXPECT_EQ(Half::from_float(1e6f).bits, 0x7c00);  // overflow to inf
  EXPECT_EQ(BFloat16::from_float(1.0f).bits, 0x3f80);
  // round to nearest even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10
  EXPECT_EQ(Half::from_float(1.0f + 1.0f / 2048).bits, 0x3c00);
  EXPECT_EQ(Half::from_float(1.0f + 3.0f / 2048).bits, 0x3c02);
  // subnormal
  EXPECT_EQ(Half::from_float(5.960464477539063e-08f).bits, 0x0001);
  EXPECT_FLOAT_EQ(Half{0x0001}.to_float(), 5.960464477539063e-08f);
}

}  // namespace collie
