#pragma once
// The backend tests' oracle: inputs per rank, dtype and reduce op, elementwise access to any
// dtype, and the expected result of every reduction and data movement, computed here in double
// (or on bytes) without collie's reduce kernels (core/reduce_kernel.h), so a bug there cannot
// hide in the expected values. Used by the conformance suite (tests/backends/conformance) and the
// gloo, mpi and nccl backend tests.
//
// Reduction inputs are small integers (products of at most a few 2s), so every result is exact in
// every dtype for up to 8 ranks and compares exactly once stored in the dtype. Data-movement
// inputs are byte patterns, distinct per rank and salt, so every byte of every element is checked.
// Thread safety: pure functions.
#include <cstddef>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/reduce_op.h"

namespace collie::testing {

using Bytes = std::vector<std::byte>;

// Element i of a buffer of dtype d, through double (integers and the float types' values as is;
// put() rounds to the dtype as a static_cast / from_float would).
void put(void* buf, size_t i, DType d, double v);
double get(const void* buf, size_t i, DType d);

// --- reductions ----------------------------------------------------------------------------------
// Element i of rank `rank`'s input to a reduction with `op`: 1..5 for sum/min/max/avg/premul_sum,
// 1 or 2 for prod (at most one 2 in any 4 consecutive ranks), 0..127 for the bitwise ops.
double input_value(ReduceOp op, int rank, size_t i);
// The premul_sum factor tests use: exact in every dtype (2 for integers, 0.5 for floats).
double premul_factor(DType d);
// Element i of reducing input_value(op, r, i) over ranks [0, world), as a double (before storing
// in d: avg truncates for integer dtypes).
double expected_reduction(ReduceOp op, int world, size_t i, DType d, double premul);
// `count` elements of d: input_value(op, rank, first + k) for k in [0, count).
Bytes reduction_input(DType d, ReduceOp op, int rank, size_t count, size_t first = 0);
// `count` elements of d: expected_reduction(op, world, first + k, d, premul).
Bytes expected_reduced(DType d, ReduceOp op, int world, size_t count, double premul,
                       size_t first = 0);

// --- data movement -------------------------------------------------------------------------------
// `count` elements of d of arbitrary bytes (each below 0x80), distinct per (rank, salt).
Bytes pattern(DType d, size_t count, int rank, int salt = 0);
// `count` elements of d filled with 0xA5 bytes: never a pattern() byte nor an expected reduction,
// so an element an op should have written and did not shows.
Bytes sentinel(DType d, size_t count);
Bytes concat(const std::vector<Bytes>& parts);
// Elements [first, first + count) of b.
Bytes slice(const Bytes& b, DType d, size_t first, size_t count);

// The layouts of comm/op.h, each rank contributing `count` elements:
// broadcast from root: every rank ends with root's input.
Bytes broadcast_input(DType d, size_t count, int rank);
// all_gather / gather: rank r's input; the result is rank 0's, rank 1's, ... inputs in order.
Bytes gather_input(DType d, size_t count, int rank);
Bytes expected_gathered(DType d, size_t count, int world);
// scatter from root: root's input (block j for rank j); rank r ends with block r.
Bytes scatter_input(DType d, size_t count, int world, int root);
Bytes expected_scattered(DType d, size_t count, int rank, int root);
// all_to_all: rank `rank`'s input (block j for rank j); it ends with block `rank` of every rank.
Bytes all_to_all_input(DType d, size_t count, int world, int rank);
Bytes expected_all_to_all(DType d, size_t count, int world, int rank);
// send/recv: what `src` sends to `dst` (with a tag); the receiver expects the same bytes.
Bytes p2p_payload(DType d, size_t count, int src, int dst, int tag);

// Empty when got == want (byte for byte), else "N of M elements differ, first at element i: got
// X, expected Y" with the values read as dtype d.
std::string mismatch(const Bytes& got, const Bytes& want, DType d);

}  // namespace collie::testing
