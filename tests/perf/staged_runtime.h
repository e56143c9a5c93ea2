#pragma once
// StagedRuntime: a DeviceRuntime for tests that behaves like a device one (not host-accessible,
// asynchronous, a description with an index and bus id) over host memory, so the perf driver's
// device paths — staged validation copies, one wait at the end of the timed loop, the "# Using
// devices" line — run without a GPU. Counts its copies. Thread safety: one rank's thread.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "device/device_runtime.h"

namespace collie::testing {

class StagedRuntime final : public device::DeviceRuntime {
 public:
  // `device`: what device() reports (the thread group's CPU by default; a CUDA device to stand
  // in for a GPU group's runtime where only the reported device matters).
  explicit StagedRuntime(int index = 0, collie::Device device = {})
      : index_(index), device_(device) {}
  collie::Device device() const override { return device_; }
  bool host_accessible() const override { return false; }
  bool asynchronous() const override { return true; }
  device::Description describe() const override {
    return {index_, "0000:0" + std::to_string(index_) + ":00", "Staged Test Device"};
  }
  device::MemoryReport memory() const override { return {1 << 30, 1 << 29, peak_}; }
  device::Buffer allocate(size_t bytes) override {
    const size_t n = (std::max<size_t>(bytes, 1) + 7) / 8 * 8;
    void* p = std::aligned_alloc(8, n);
    std::memset(p, 0, n);
    live_ += static_cast<int64_t>(n);
    peak_ = std::max(peak_, live_);
    return device::Buffer(this, p, n);
  }
  void copy_to_device(void* d, const void* s, size_t n) override {
    ++to_device;
    std::memmove(d, s, n);
  }
  void copy_to_host(void* d, const void* s, size_t n) override {
    ++to_host;
    std::memmove(d, s, n);
  }
  void copy(void* d, const void* s, size_t n) override { std::memmove(d, s, n); }
  void synchronize() override {}
  std::unique_ptr<device::Timer> timer() override { return std::make_unique<Clock>(); }

  int to_device = 0, to_host = 0;

 protected:
  void release(void* data, size_t bytes) noexcept override {
    live_ -= static_cast<int64_t>(bytes);
    std::free(data);
  }

 private:
  struct Clock : device::Timer {
    std::vector<std::chrono::steady_clock::time_point> t;
    int mark() override {
      t.push_back(std::chrono::steady_clock::now());
      return static_cast<int>(t.size()) - 1;
    }
    double elapsed_us(int a, int b) override {
      return std::chrono::duration<double, std::micro>(t.at(b) - t.at(a)).count();
    }
  };
  int index_;
  collie::Device device_;
  int64_t live_ = 0, peak_ = 0;
};

}  // namespace collie::testing
