#pragma once
// Test data for collective checks: inputs chosen so every reduction is exact in every dtype
// (small integers; products of at most a few 2s), elementwise access to any dtype through
// double, and the expected result of a reduction computed independently of the backend.
#include <cstddef>
#include <vector>

#include "core/dtype.h"
#include "core/reduce_op.h"

namespace collie::testing {

double input_value(ReduceOp op, int rank, size_t i);
void put(void* buf, size_t i, DType d, double v);
double get(const void* buf, size_t i, DType d);
// Expected element i of reducing input_value(op, r, i) over ranks [0, world), as stored in d.
double expected_reduction(ReduceOp op, int world, size_t i, DType d, double premul);
// The premul factor tests use: exact in every dtype (2 for integers, 0.5 for floats).
double premul_factor(DType d);
// True when a and b agree for dtype d (exact, except avg/premul on floats: a few ULPs).
bool same_value(double got, double want, DType d, ReduceOp op);

// A buffer of n elements of dtype d.
struct Buffer {
  Buffer(size_t n, DType d) : dtype(d), numel(n), bytes(n * dtype_size(d) + 1) {}
  DType dtype;
  size_t numel;
  std::vector<unsigned char> bytes;
  void* data() { return bytes.data(); }
  void set(size_t i, double v) { put(bytes.data(), i, dtype, v); }
  double at(size_t i) const { return get(bytes.data(), i, dtype); }
};

}  // namespace collie::testing
