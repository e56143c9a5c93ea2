#pragma once
// Verifiable data for perf validation. Every input element is a small non-negative integer
// derived from (seed, index, rank), chosen so that sums, products, minima and maxima over all
// ranks stay exactly representable in every dtype (int8 and bfloat16 included). The reduction
// is therefore exact in any order and results are compared bit for bit; only float avg, whose
// final division rounds, is allowed 2 ULP. Thread-safe: pure functions.
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/reduce_op.h"

namespace collie::perf {

struct DataSpec {
  DType dtype = DType::Float32;
  ReduceOp op = ReduceOp::Sum;  // shapes the value range (products use 1s and 2s)
  int world_size = 1;
  uint64_t seed = 0;
};

// buf[i] = value(rank, first_index + i) for i < n.
void fill_input(const DataSpec& s, int rank, size_t first_index, void* buf, size_t n);
// buf[i] = reduction over all ranks of value(k, first_index + i), finished for Avg.
void fill_reduced(const DataSpec& s, size_t first_index, void* buf, size_t n);

struct CheckResult {
  int64_t wrong = 0;
  int64_t first_offset = -1;  // element index of the first mismatch, -1 when none
};
// Compares `got` with `want` (n elements): bitwise, or within 2 ULP for float dtypes when
// `approx` (float avg).
CheckResult compare(const void* got, const void* want, size_t n, DType d, bool approx);

}  // namespace collie::perf
