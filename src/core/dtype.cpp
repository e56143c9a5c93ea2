#include "core/dtype.h"

#include <string>

#include "core/dtype_visit.h"

namespace collie {

size_t dtype_size(DType d) {
  if (static_cast<uint8_t>(d) > static_cast<uint8_t>(DType::Float64)) return 0;  // not a DType
  return visit_dtype(d, [](auto tag) { return sizeof(typename decltype(tag)::type); });
}

bool is_signed(DType d) {
  return d == DType::Int8 || d == DType::Int32 || d == DType::Int64 || is_floating(d);
}

std::string_view dtype_name(DType d) {
  switch (d) {
    case DType::Int8:
      return "int8";
    case DType::UInt8:
      return "uint8";
    case DType::Int32:
      return "int32";
    case DType::UInt32:
      return "uint32";
    case DType::Int64:
      return "int64";
    case DType::UInt64:
      return "uint64";
    case DType::Float16:
      return "float16";
    case DType::BFloat16:
      return "bfloat16";
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
  }
  return "?";
}

std::string_view nccl_tests_name(DType d) {
  switch (d) {
    case DType::Float16:
      return "half";
    case DType::Float32:
      return "float";
    case DType::Float64:
      return "double";
    default:
      return dtype_name(d);
  }
}

std::optional<DType> parse_dtype(std::string_view s) {
  for (DType d : kAllDTypes) {
    if (s == dtype_name(d) || s == nccl_tests_name(d)) return d;
  }
  struct Alias {
    std::string_view name;
    DType d;
  };
  static constexpr Alias kAliases[] = {
      {"fp16", DType::Float16}, {"bf16", DType::BFloat16}, {"fp32", DType::Float32},
      {"fp64", DType::Float64}, {"char", DType::Int8},     {"int", DType::Int32},
      {"long", DType::Int64},   {"uint", DType::UInt32},   {"ulong", DType::UInt64}};
  for (const auto& a : kAliases) {
    if (s == a.name) return a.d;
  }
  return std::nullopt;
}

}  // namespace collie
