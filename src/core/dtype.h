#pragma once
// Element types understood by every collie module. Thread-safe: pure functions over constants.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/export.h"

namespace collie {

enum class DType : uint8_t {
  Int8,
  UInt8,
  Int32,
  UInt32,
  Int64,
  UInt64,
  Float16,
  BFloat16,
  Float32,
  Float64,
};

inline constexpr std::array<DType, 10> kAllDTypes = {
    DType::Int8,   DType::UInt8,   DType::Int32,    DType::UInt32,  DType::Int64,
    DType::UInt64, DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};

COLLIE_API size_t dtype_size(DType d);
constexpr bool is_floating(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 || d == DType::Float64;
}
COLLIE_API bool is_signed(DType d);
// Canonical collie spelling: "int8" ... "float16", "bfloat16", "float32", "float64".
COLLIE_API std::string_view dtype_name(DType d);
// nccl-tests spelling used in its table: "half", "float", "double", others as canonical.
COLLIE_API std::string_view nccl_tests_name(DType d);
// Accepts both spellings and common aliases (fp16, bf16, fp32, fp64, char, int, long).
COLLIE_API std::optional<DType> parse_dtype(std::string_view s);

}  // namespace collie
