#include "backends/backend_test_data.h"

#include "core/half.h"
#include "core/reduce_kernel.h"

namespace collie::test {
namespace {

void store(void* buf, size_t i, DType d, int v) {
  switch (d) {
    case DType::Int8:
      static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(v);
      break;
    case DType::UInt8:
      static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(v);
      break;
    case DType::Int32:
      static_cast<int32_t*>(buf)[i] = v;
      break;
    case DType::UInt32:
      static_cast<uint32_t*>(buf)[i] = static_cast<uint32_t>(v);
      break;
    case DType::Int64:
      static_cast<int64_t*>(buf)[i] = v;
      break;
    case DType::UInt64:
      static_cast<uint64_t*>(buf)[i] = static_cast<uint64_t>(v);
      break;
    case DType::Float16:
      static_cast<Half*>(buf)[i] = Half::from_float(static_cast<float>(v));
      break;
    case DType::BFloat16:
      static_cast<BFloat16*>(buf)[i] = BFloat16::from_float(static_cast<float>(v));
      break;
    case DType::Float32:
      static_cast<float*>(buf)[i] = static_cast<float>(v);
      break;
    case DType::Float64:
      static_cast<double*>(buf)[i] = v;
      break;
  }
}

}  // namespace

Buffer values(DType d, size_t count, int rank, int salt) {
  Buffer b(count * dtype_size(d));
  for (size_t i = 0; i < count; ++i) {
    store(b.data(), i, d, static_cast<int>((static_cast<size_t>(rank) * 5 + i + salt) % 3) + 1);
  }
  return b;
}

Buffer pattern(DType d, size_t count, int rank, int salt) {
  Buffer b(count * dtype_size(d));
  for (size_t j = 0; j < b.size(); ++j) {
    b[j] = static_cast<std::byte>((rank * 37 + salt * 11 + j * 7 + 1) & 0x7f);
  }
  return b;
}

Buffer reduced(DType d, size_t count, int n, ReduceOp op, double factor, int salt) {
  Buffer acc;
  for (int r = 0; r < n; ++r) {
    Buffer in = values(d, count, r, salt);
    if (op == ReduceOp::PreMulSum) scale(in.data(), count, d, factor);
    if (r == 0) {
      acc = std::move(in);
    } else {
      reduce_into(acc.data(), in.data(), count, d, op);
    }
  }
  if (op == ReduceOp::Avg) divide(acc.data(), count, d, n);
  return acc;
}

TensorView view(Buffer& b, DType d) {
  return TensorView::cpu(b.data(), b.size() / dtype_size(d), d);
}

}  // namespace collie::test
