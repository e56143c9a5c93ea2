#include "test_values.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/half.h"

namespace collie::testing {
namespace {

template <typename T>
void put_as(void* buf, size_t i, double v) {
  T t = static_cast<T>(v);
  std::memcpy(static_cast<char*>(buf) + i * sizeof(T), &t, sizeof(T));
}
template <typename T>
double get_as(const void* buf, size_t i) {
  T t;
  std::memcpy(&t, static_cast<const char*>(buf) + i * sizeof(T), sizeof(T));
  return static_cast<double>(t);
}

}  // namespace

double input_value(ReduceOp op, int rank, size_t i) {
  switch (op) {
    case ReduceOp::Prod:
      return (rank + i) % 4 == 0 ? 2 : 1;
    case ReduceOp::BAnd:
    case ReduceOp::BOr:
    case ReduceOp::BXor:
      return static_cast<double>((rank * 37 + i * 11) % 128);
    default:
      return static_cast<double>((rank * 7 + i * 3) % 5 + 1);
  }
}

void put(void* buf, size_t i, DType d, double v) {
  switch (d) {
    case DType::Int8:
      return put_as<int8_t>(buf, i, v);
    case DType::UInt8:
      return put_as<uint8_t>(buf, i, v);
    case DType::Int32:
      return put_as<int32_t>(buf, i, v);
    case DType::UInt32:
      return put_as<uint32_t>(buf, i, v);
    case DType::Int64:
      return put_as<int64_t>(buf, i, v);
    case DType::UInt64:
      return put_as<uint64_t>(buf, i, v);
    case DType::Float16: {
      Half h = Half::from_float(static_cast<float>(v));
      std::memcpy(static_cast<char*>(buf) + i * 2, &h, 2);
      return;
    }
    case DType::BFloat16: {
      BFloat16 h = BFloat16::from_float(static_cast<float>(v));
      std::memcpy(static_cast<char*>(buf) + i * 2, &h, 2);
      return;
    }
    case DType::Float32:
      return put_as<float>(buf, i, v);
    case DType::Float64:
      return put_as<double>(buf, i, v);
  }
}

double get(const void* buf, size_t i, DType d) {
  switch (d) {
    case DType::Int8:
      return get_as<int8_t>(buf, i);
    case DType::UInt8:
      return get_as<uint8_t>(buf, i);
    case DType::Int32:
      return get_as<int32_t>(buf, i);
    case DType::UInt32:
      return get_as<uint32_t>(buf, i);
    case DType::Int64:
      return get_as<int64_t>(buf, i);
    case DType::UInt64:
      return get_as<uint64_t>(buf, i);
    case DType::Float16: {
      Half h;
      std::memcpy(&h, static_cast<const char*>(buf) + i * 2, 2);
      return h.to_float();
    }
    case DType::BFloat16: {
      BFloat16 h;
      std::memcpy(&h, static_cast<const char*>(buf) + i * 2, 2);
      return h.to_float();
    }
    case DType::Float32:
      return get_as<float>(buf, i);
    case DType::Float64:
      return get_as<double>(buf, i);
  }
  return 0;
}

double premul_factor(DType d) { return is_floating(d) ? 0.5 : 2.0; }

double expected_reduction(ReduceOp op, int world, size_t i, DType d, double premul) {
  double acc = input_value(op, 0, i);
  int64_t bits = static_cast<int64_t>(acc);
  if (op == ReduceOp::PreMulSum) acc *= premul;
  for (int r = 1; r < world; ++r) {
    const double v = input_value(op, r, i);
    const int64_t b = static_cast<int64_t>(v);
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg:
        acc += v;
        break;
      case ReduceOp::PreMulSum:
        acc += v * premul;
        break;
      case ReduceOp::Prod:
        acc *= v;
        break;
      case ReduceOp::Min:
        acc = std::min(acc, v);
        break;
      case ReduceOp::Max:
        acc = std::max(acc, v);
        break;
      case ReduceOp::BAnd:
        bits &= b;
        break;
      case ReduceOp::BOr:
        bits |= b;
        break;
      case ReduceOp::BXor:
        bits ^= b;
        break;
    }
  }
  if (is_bitwise(op)) return static_cast<double>(bits);
  if (op == ReduceOp::Avg) {
    acc = is_floating(d) ? acc / world : std::trunc(acc / world);
  }
  return acc;
}

bool same_value(double got, double want, DType d, ReduceOp op) {
  const bool inexact = is_floating(d) && (op == ReduceOp::Avg || op == ReduceOp::PreMulSum);
  if (!inexact) return got == want;
  const double rel = d == DType::Float16 || d == DType::BFloat16 ? 1e-2 : 1e-6;
  return std::fabs(got - want) <= rel * std::max(1.0, std::fabs(want));
}

}  // namespace collie::testing
