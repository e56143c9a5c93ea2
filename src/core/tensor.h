#pragma once
// TensorView: a non-owning view of a contiguous buffer. The caller owns the memory and must keep
// it alive (and unmodified by others) until the Work that uses it completes.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/dtype.h"
#include "core/export.h"

namespace collie {

enum class DeviceType : uint8_t { CPU, CUDA };
COLLIE_API std::string_view device_type_name(DeviceType t);  // "cpu", "cuda"

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = -1;
  bool operator==(const Device&) const = default;
};

// Up to 8 dimensions, stored inline so building a view never allocates.
struct COLLIE_API Shape {
  static constexpr int kMaxDims = 8;
  std::array<int64_t, kMaxDims> dims{};
  uint8_t ndim = 0;
  bool operator==(const Shape& o) const;
  int64_t numel() const;          // product of dims; -1 when ndim == 0 (unspecified)
  std::string to_string() const;  // "[20, 10]"
};

struct COLLIE_API TensorView {
  void* data = nullptr;
  size_t numel = 0;
  DType dtype = DType::Float32;
  Device device;
  Shape shape;  // optional; ndim == 0 means 1-D of numel elements

  size_t nbytes() const { return numel * dtype_size(dtype); }
  bool empty() const { return numel == 0; }
  // Effective shape: `shape` when set, else [numel].
  Shape effective_shape() const;
  // Elements [offset, offset + count) as a 1-D view. REQUIRES: offset + count <= numel.
  TensorView slice(size_t offset, size_t count) const;
  static TensorView cpu(void* data, size_t numel, DType dtype) {
    return TensorView{data, numel, dtype, Device{}, Shape{}};
  }
  template <typename T>
  static TensorView of(std::span<T> s, DType dtype) {
    return cpu(const_cast<std::remove_const_t<T>*>(s.data()),
               s.size() * sizeof(T) / dtype_size(dtype), dtype);
  }
};

}  // namespace collie
