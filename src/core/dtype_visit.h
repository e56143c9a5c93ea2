#pragma once
// visit_dtype(d, f): the one place a DType becomes a C++ element type. Calls f(DTypeTag<T>{})
// with T = int8_t, uint8_t, int32_t, uint32_t, int64_t, uint64_t, Half, BFloat16, float or double
// and returns what f returns (every instantiation must return the same type).
//   visit_dtype(d, [&](auto tag) { using T = typename decltype(tag)::type; ... });
// Thread-safe: a pure dispatch. Throws InvalidArgument for a value outside the enum.
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/dtype.h"
#include "core/error.h"
#include "core/half.h"

namespace collie {

template <typename T>
struct DTypeTag {
  using type = T;
};

// The 16-bit float storage types, which compute through float.
template <typename T>
inline constexpr bool is_half_type_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <typename F>
decltype(auto) visit_dtype(DType d, F&& f) {
  switch (d) {
    case DType::Int8:
      return f(DTypeTag<int8_t>{});
    case DType::UInt8:
      return f(DTypeTag<uint8_t>{});
    case DType::Int32:
      return f(DTypeTag<int32_t>{});
    case DType::UInt32:
      return f(DTypeTag<uint32_t>{});
    case DType::Int64:
      return f(DTypeTag<int64_t>{});
    case DType::UInt64:
      return f(DTypeTag<uint64_t>{});
    case DType::Float16:
      return f(DTypeTag<Half>{});
    case DType::BFloat16:
      return f(DTypeTag<BFloat16>{});
    case DType::Float32:
      return f(DTypeTag<float>{});
    case DType::Float64:
      return f(DTypeTag<double>{});
  }
  throw InvalidArgument("unknown dtype value " + std::to_string(static_cast<int>(d)));
}

}  // namespace collie
