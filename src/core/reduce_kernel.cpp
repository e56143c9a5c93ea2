#include "core/reduce_kernel.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/dtype_visit.h"
#include "core/error.h"
#include "core/half.h"

namespace collie {
namespace {

template <typename T, typename F>
void apply(void* acc, const void* in, size_t n, F f) {
  T* a = static_cast<T*>(acc);
  const T* b = static_cast<const T*>(in);
  for (size_t i = 0; i < n; ++i) a[i] = f(a[i], b[i]);
}

// Integer sums and products wrap around, as NCCL's, Gloo's and MPI's do on two's-complement
// machines; done in unsigned arithmetic (at least as wide as unsigned, so that 16-bit operands are
// not promoted to int), where a signed overflow would be undefined behaviour.
template <typename T>
using WrapOf =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <typename T>
T sum_of(T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<WrapOf<T>>(x) + static_cast<WrapOf<T>>(y));
  } else {
    return static_cast<T>(x + y);
  }
}

template <typename T>
T product_of(T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<WrapOf<T>>(x) * static_cast<WrapOf<T>>(y));
  } else {
    return static_cast<T>(x * y);
  }
}

template <typename T>
void reduce_typed(void* acc, const void* in, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
    case ReduceOp::PreMulSum:
      apply<T>(acc, in, n, [](T x, T y) { return sum_of(x, y); });
      return;
    case ReduceOp::Prod:
      apply<T>(acc, in, n, [](T x, T y) { return product_of(x, y); });
      return;
    case ReduceOp::Min:
      apply<T>(acc, in, n, [](T x, T y) { return std::min(x, y); });
      return;
    case ReduceOp::Max:
      apply<T>(acc, in, n, [](T x, T y) { return std::max(x, y); });
      return;
    case ReduceOp::BAnd:
    case ReduceOp::BOr:
    case ReduceOp::BXor:
      if constexpr (std::is_integral_v<T>) {
        if (op == ReduceOp::BAnd) apply<T>(acc, in, n, [](T x, T y) { return T(x & y); });
        if (op == ReduceOp::BOr) apply<T>(acc, in, n, [](T x, T y) { return T(x | y); });
        if (op == ReduceOp::BXor) apply<T>(acc, in, n, [](T x, T y) { return T(x ^ y); });
        return;
      }
      break;
  }
  throw InvalidArgument("reduce op " + std::string(reduce_op_name(op)) +
                        " is defined for integer dtypes only");
}

// 16-bit floats reduce through float, one rounding per step (as Gloo and NCCL do).
template <typename H>
void reduce_half(void* acc, const void* in, size_t n, ReduceOp op) {
  if (is_bitwise(op)) {
    throw InvalidArgument("reduce op " + std::string(reduce_op_name(op)) +
                          " is defined for integer dtypes only");
  }
  H* a = static_cast<H*>(acc);
  const H* b = static_cast<const H*>(in);
  for (size_t i = 0; i < n; ++i) {
    float x = a[i].to_float(), y = b[i].to_float(), r;
    switch (op) {
      case ReduceOp::Prod:
        r = x * y;
        break;
      case ReduceOp::Min:
        r = std::min(x, y);
        break;
      case ReduceOp::Max:
        r = std::max(x, y);
        break;
      default:
        r = x + y;
        break;
    }
    a[i] = H::from_float(r);
  }
}

template <typename T>
void scale_typed(void* buf, size_t n, double factor) {
  T* p = static_cast<T*>(buf);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<T>(p[i] * factor);
}

template <typename H>
void scale_half(void* buf, size_t n, double factor) {
  H* p = static_cast<H*>(buf);
  for (size_t i = 0; i < n; ++i) p[i] = H::from_float(static_cast<float>(p[i].to_float() * factor));
}

template <typename T>
void divide_typed(void* buf, size_t n, int64_t k) {
  T* p = static_cast<T*>(buf);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(k));
}

template <typename H>
void divide_half(void* buf, size_t n, int64_t k) {
  H* p = static_cast<H*>(buf);
  for (size_t i = 0; i < n; ++i) p[i] = H::from_float(p[i].to_float() / static_cast<float>(k));
}

}  // namespace

void reduce_into(void* acc, const void* in, size_t n, DType d, ReduceOp op) {
  visit_dtype(d, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_half_type_v<T>) {
      reduce_half<T>(acc, in, n, op);
    } else {
      reduce_typed<T>(acc, in, n, op);
    }
  });
}

void scale(void* buf, size_t n, DType d, double factor) {
  visit_dtype(d, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_half_type_v<T>) {
      scale_half<T>(buf, n, factor);
    } else {
      scale_typed<T>(buf, n, factor);
    }
  });
}

void divide(void* buf, size_t n, DType d, int64_t k) {
  visit_dtype(d, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_half_type_v<T>) {
      divide_half<T>(buf, n, k);
    } else {
      divide_typed<T>(buf, n, k);
    }
  });
}

}  // namespace collie
