#pragma once
// Deterministic per-rank inputs and host-side references shared by the backend tests (references
// use core/reduce_kernel.h, itself tested in tests/core).
#include <cstddef>
#include <vector>

#include "core/reduce_op.h"
#include "core/tensor.h"

namespace collie::test {

using Buffer = std::vector<std::byte>;

// `count` elements of `d` holding small integers (1..3) that depend on `rank` and `salt`, so
// sums, products and averages are exact in every dtype for up to 4 ranks.
Buffer values(DType d, size_t count, int rank, int salt = 0);
// Arbitrary bytes for data movement, distinct per rank.
Buffer pattern(DType d, size_t count, int rank, int salt = 0);
// Elementwise reduction of values(d, count, r, salt) over ranks 0..n-1 with op (Avg divides,
// PreMulSum scales each input by `factor` first).
Buffer reduced(DType d, size_t count, int n, ReduceOp op, double factor, int salt = 0);
// Host view of a buffer.
TensorView view(Buffer& b, DType d);

}  // namespace collie::test
