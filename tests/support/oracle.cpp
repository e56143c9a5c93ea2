#include "support/oracle.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/dtype_visit.h"
#include "core/half.h"

namespace collie::testing {
// Element access through core's one DType -> C++ type mapping (dtype_visit.h); 16-bit floats
// convert through float. Only the mapping is shared with the product, never its reductions.
void put(void* buf, size_t i, DType d, double v) {
  visit_dtype(d, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T t;
    if constexpr (is_half_type_v<T>) {
      t = T::from_float(static_cast<float>(v));
    } else {
      t = static_cast<T>(v);
    }
    std::memcpy(static_cast<char*>(buf) + i * sizeof(T), &t, sizeof(T));
  });
}

double get(const void* buf, size_t i, DType d) {
  return visit_dtype(d, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T t;
    std::memcpy(&t, static_cast<const char*>(buf) + i * sizeof(T), sizeof(T));
    if constexpr (is_half_type_v<T>) {
      return static_cast<double>(t.to_float());
    } else {
      return static_cast<double>(t);
    }
  });
}

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
  if (op == ReduceOp::Avg) acc = is_floating(d) ? acc / world : std::trunc(acc / world);
  return acc;
}

Bytes reduction_input(DType d, ReduceOp op, int rank, size_t count, size_t first) {
  Bytes b(count * dtype_size(d));
  for (size_t k = 0; k < count; ++k) put(b.data(), k, d, input_value(op, rank, first + k));
  return b;
}

Bytes expected_reduced(DType d, ReduceOp op, int world, size_t count, double premul, size_t first) {
  Bytes b(count * dtype_size(d));
  for (size_t k = 0; k < count; ++k) {
    put(b.data(), k, d, expected_reduction(op, world, first + k, d, premul));
  }
  return b;
}

Bytes pattern(DType d, size_t count, int rank, int salt) {
  Bytes b(count * dtype_size(d));
  for (size_t j = 0; j < b.size(); ++j) {
    b[j] = static_cast<std::byte>((rank * 37 + salt * 11 + j * 7 + 1) & 0x7f);
  }
  return b;
}

Bytes sentinel(DType d, size_t count) { return Bytes(count * dtype_size(d), std::byte{0xA5}); }

Bytes concat(const std::vector<Bytes>& parts) {
  Bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Bytes slice(const Bytes& b, DType d, size_t first, size_t count) {
  const size_t es = dtype_size(d);
  return Bytes(b.begin() + static_cast<ptrdiff_t>(first * es),
               b.begin() + static_cast<ptrdiff_t>((first + count) * es));
}

Bytes broadcast_input(DType d, size_t count, int rank) { return pattern(d, count, rank, 1); }

Bytes gather_input(DType d, size_t count, int rank) { return pattern(d, count, rank, 2); }

Bytes expected_gathered(DType d, size_t count, int world) {
  std::vector<Bytes> parts;
  for (int r = 0; r < world; ++r) parts.push_back(gather_input(d, count, r));
  return concat(parts);
}

// Scatter and all_to_all salts start above the other ops' so no two blocks coincide.
Bytes scatter_input(DType d, size_t count, int world, int root) {
  std::vector<Bytes> parts;
  for (int j = 0; j < world; ++j) parts.push_back(pattern(d, count, root, 3 + j));
  return concat(parts);
}

Bytes expected_scattered(DType d, size_t count, int rank, int root) {
  return pattern(d, count, root, 3 + rank);
}

Bytes all_to_all_input(DType d, size_t count, int world, int rank) {
  std::vector<Bytes> parts;
  for (int j = 0; j < world; ++j) parts.push_back(pattern(d, count, rank, 20 + j));
  return concat(parts);
}

Bytes expected_all_to_all(DType d, size_t count, int world, int rank) {
  std::vector<Bytes> parts;
  for (int j = 0; j < world; ++j) parts.push_back(pattern(d, count, j, 20 + rank));
  return concat(parts);
}

Bytes p2p_payload(DType d, size_t count, int src, int dst, int tag) {
  return pattern(d, count, src, 40 + dst * 3 + tag);
}

std::string mismatch(const Bytes& got, const Bytes& want, DType d) {
  if (got == want) return {};
  if (got.size() != want.size()) {
    return fmt::format("got {} bytes, expected {}", got.size(), want.size());
  }
  const size_t es = dtype_size(d), n = got.size() / es;
  size_t bad = 0, first = n;
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(got.data() + i * es, want.data() + i * es, es) != 0) {
      ++bad;
      if (first == n) first = i;
    }
  }
  return fmt::format("{} of {} elements differ, first at element {}: got {}, expected {}", bad, n,
                     first, get(got.data(), first, d), get(want.data(), first, d));
}

}  // namespace collie::testing
