#include "device/device_runtime.h"

namespace collie::device {

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = o.owner_;
    data_ = o.data_;
    bytes_ = o.bytes_;
    o.owner_ = nullptr;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void Buffer::reset() {
  if (owner_ != nullptr && data_ != nullptr) owner_->release(data_, bytes_);
  owner_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

void DeviceRuntime::begin_capture() {
  throw DeviceError(
      "CUDA graphs (-G) need a CUDA backend (--backend nccl); this group runs on the host");
}

std::unique_ptr<CapturedGraph> DeviceRuntime::end_capture() {
  throw DeviceError("end_capture without a CUDA graph capture in progress");
}

}  // namespace collie::device
