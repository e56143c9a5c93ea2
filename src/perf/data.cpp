#include "perf/data.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/dtype_visit.h"
#include "core/half.h"
#include "core/reduce_kernel.h"

namespace collie::perf {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64 finalizer: cheap, well-spread, deterministic
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Largest integer every rank's value may reach so the reduction stays exact in `d`.
uint64_t exact_limit(DType d) {
  switch (d) {
    case DType::Int8:
      return 127;
    case DType::UInt8:
      return 255;
    case DType::BFloat16:
      return 256;
    case DType::Float16:
      return 2048;
    default:
      return 1u << 20;
  }
}

void store(void* buf, size_t i, uint32_t v, DType d) {
  visit_dtype(d, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_half_type_v<T>) {
      static_cast<T*>(buf)[i] = T::from_float(static_cast<float>(v));
    } else {
      static_cast<T*>(buf)[i] = static_cast<T>(v);
    }
  });
}

// Signed distance-preserving integer for IEEE bit patterns (ULP distance = difference).
int64_t ordered(uint64_t bits, int width_bits) {
  const uint64_t sign = 1ULL << (width_bits - 1);
  const uint64_t mag = bits & (sign - 1);
  return (bits & sign) ? -static_cast<int64_t>(mag) : static_cast<int64_t>(mag);
}

}  // namespace

void fill_input(const DataSpec& s, int rank, size_t first, void* buf, size_t n) {
  const uint64_t key = mix(s.seed ^ (static_cast<uint64_t>(rank + 1) << 40));
  if (s.op == ReduceOp::Prod) {
    // At most 6 factors of 2 per element (rank < 6), so products stay <= 64.
    for (size_t i = 0; i < n; ++i) {
      const bool two = rank < 6 && (mix(key + first + i) & 3) == 0;
      store(buf, i, two ? 2 : 1, s.dtype);
    }
    return;
  }
  const uint64_t per_rank = std::max<uint64_t>(1, exact_limit(s.dtype) / std::max(1, s.world_size));
  const uint64_t range = std::min<uint64_t>(per_rank, 16);
  for (size_t i = 0; i < n; ++i)
    store(buf, i, static_cast<uint32_t>(mix(key + first + i) % range), s.dtype);
}

void fill_reduced(const DataSpec& s, size_t first, void* buf, size_t n) {
  const size_t bytes = n * dtype_size(s.dtype);
  fill_input(s, 0, first, buf, n);
  std::vector<uint64_t> tmp((bytes + 7) / 8);
  for (int k = 1; k < s.world_size; ++k) {
    fill_input(s, k, first, tmp.data(), n);
    reduce_into(buf, tmp.data(), n, s.dtype, s.op);
  }
  if (s.op == ReduceOp::Avg) divide(buf, n, s.dtype, s.world_size);
}

CheckResult compare(const void* got, const void* want, size_t n, DType d, bool approx) {
  CheckResult r;
  const size_t w = dtype_size(d);
  const auto* g = static_cast<const uint8_t*>(got);
  const auto* e = static_cast<const uint8_t*>(want);
  const bool ulp = approx && is_floating(d);
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(g + i * w, e + i * w, w) == 0) continue;
    if (ulp) {
      uint64_t a = 0, b = 0;
      std::memcpy(&a, g + i * w, w);
      std::memcpy(&b, e + i * w, w);
      const int64_t diff =
          ordered(a, static_cast<int>(w * 8)) - ordered(b, static_cast<int>(w * 8));
      if (diff >= -2 && diff <= 2) continue;
    }
    if (r.first_offset < 0) r.first_offset = static_cast<int64_t>(i);
    ++r.wrong;
  }
  return r;
}

}  // namespace collie::perf
