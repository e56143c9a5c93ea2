#include "core/tensor.h"

namespace collie {

std::string_view device_type_name(DeviceType t) { return t == DeviceType::CUDA ? "cuda" : "cpu"; }

bool Shape::operator==(const Shape& o) const {
  if (ndim != o.ndim) return false;
  for (int i = 0; i < ndim; ++i) {
    if (dims[i] != o.dims[i]) return false;
  }
  return true;
}

int64_t Shape::numel() const {
  if (ndim == 0) return -1;
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= dims[i];
  return n;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

Shape TensorView::effective_shape() const {
  if (shape.ndim > 0) return shape;
  Shape s;
  s.ndim = 1;
  s.dims[0] = static_cast<int64_t>(numel);
  return s;
}

TensorView TensorView::slice(size_t offset, size_t count) const {
  TensorView v = *this;
  v.data = static_cast<char*>(data) + offset * dtype_size(dtype);
  v.numel = count;
  v.shape = Shape{};
  return v;
}

}  // namespace collie
