#pragma once
// Host reduction kernels: the one implementation of "combine two buffers elementwise" shared by
// backends that build algorithms on point-to-point primitives, by perf validation and by tests.
// Thread-safe (no state). REQUIRES: buffers hold n elements of dtype d and do not overlap
// unless acc == in; bitwise ops only with integer dtypes (InvalidArgument otherwise).
#include <cstddef>

#include "core/dtype.h"
#include "core/export.h"
#include "core/reduce_op.h"

namespace collie {

// acc[i] = acc[i] (op) in[i]. Avg accumulates a sum (finish with scale); PreMulSum likewise.
COLLIE_API void reduce_into(void* acc, const void* in, size_t n, DType d, ReduceOp op);
// buf[i] *= factor (integer dtypes: truncating division when factor = 1/k, as torch's avg does).
COLLIE_API void scale(void* buf, size_t n, DType d, double factor);
// buf[i] /= divisor, exact integer division for integer dtypes (used by Avg).
COLLIE_API void divide(void* buf, size_t n, DType d, int64_t divisor);

}  // namespace collie
