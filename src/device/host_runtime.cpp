#include "device/host_runtime.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "core/atomic_max.h"

namespace collie::device {
namespace {

class SteadyTimer final : public Timer {
 public:
  int mark() override {
    marks_.push_back(std::chrono::steady_clock::now());
    return static_cast<int>(marks_.size()) - 1;
  }
  double elapsed_us(int a, int b) override {
    return std::chrono::duration<double, std::micro>(marks_.at(b) - marks_.at(a)).count();
  }
  void reserve(int n) override { marks_.reserve(static_cast<size_t>(std::max(n, 0))); }
  std::optional<std::chrono::steady_clock::time_point> host_time(int i) const override {
    return marks_.at(static_cast<size_t>(i));
  }

 private:
  std::vector<std::chrono::steady_clock::time_point> marks_;
};

// The kernel's estimate of what can be allocated without swapping (MemAvailable: free memory and
// the page cache it can drop), -1 when unknown. MemFree alone leaves out the cache, which on a
// busy host is most of its memory.
int64_t available_bytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "re");
  if (f == nullptr) return -1;
  char line[256];
  long long kib = -1;
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::sscanf(line, "MemAvailable: %lld kB", &kib) == 1) break;
  std::fclose(f);
  return kib < 0 ? -1 : static_cast<int64_t>(kib) * 1024;
}

}  // namespace

MemoryReport HostRuntime::memory() const {
  MemoryReport m;
  const long page = ::sysconf(_SC_PAGESIZE);
  const long phys = ::sysconf(_SC_PHYS_PAGES);
  const long avail = ::sysconf(_SC_AVPHYS_PAGES);
  if (page > 0 && phys > 0) m.total_bytes = static_cast<int64_t>(page) * phys;
  m.free_bytes = available_bytes();
  if (m.free_bytes < 0 && page > 0 && avail > 0) m.free_bytes = static_cast<int64_t>(page) * avail;
  m.peak_allocated_bytes = peak_.load();
  return m;
}

Buffer HostRuntime::allocate(size_t bytes) {
  const size_t n = (std::max<size_t>(bytes, 1) + 7) / 8 * 8;
  void* p = std::aligned_alloc(8, n);
  if (p == nullptr)
    throw DeviceError(fmt::format("host memory: could not allocate {} bytes", bytes));
  std::memset(p, 0, n);
  raise_max(peak_, live_ += static_cast<int64_t>(n));
  return Buffer(this, p, n);
}

void HostRuntime::release(void* data, size_t bytes) noexcept {
  live_ -= static_cast<int64_t>(bytes);
  std::free(data);
}

void HostRuntime::copy_to_device(void* dst, const void* host_src, size_t bytes) {
  if (bytes) std::memmove(dst, host_src, bytes);
}
void HostRuntime::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  if (bytes) std::memmove(host_dst, src, bytes);
}
void HostRuntime::copy(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
}

std::unique_ptr<Timer> HostRuntime::timer() { return std::make_unique<SteadyTimer>(); }

DeviceRuntime& host_runtime() {
  static HostRuntime rt;
  return rt;
}

}  // namespace collie::device
