#pragma once
// DeviceRuntime: the seam through which tools (perf, probes) get the memory, copies, timing and
// synchronization of the device a ProcessGroup's buffers live on — host memory for gloo and mpi,
// the group's CUDA device and stream for nccl (backends/nccl/cuda_device.h). Tools never include a
// device library; they ask the group (ProcessGroup::device_runtime()) and use this interface.
//
// Ownership: the group owns its runtime; it stays valid until the group is destroyed. Buffers
// returned by allocate() free themselves (RAII) and must not outlive the runtime.
// Thread safety: one thread at a time per runtime (the thread that submits the group's ops);
// describe() and memory() are safe from any thread.
// Ordering: copies, timer marks and graph launches are ordered with the group's collectives
// (on CUDA: the same stream), so a copy issued after a collective sees its result.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/export.h"
#include "core/tensor.h"

namespace collie::device {

class DeviceRuntime;

// A device allocation; move-only, freed on destruction. data() is a device pointer: only the
// runtime that allocated it (and the group's ops) may touch it, unless host_accessible().
class COLLIE_API Buffer {
 public:
  Buffer() = default;
  Buffer(DeviceRuntime* owner, void* data, size_t bytes)
      : owner_(owner), data_(data), bytes_(bytes) {}
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  char* data() const { return static_cast<char*>(data_); }
  size_t bytes() const { return bytes_; }
  void reset();

 private:
  DeviceRuntime* owner_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// What the "# Using devices" line names for one rank.
struct Description {
  int index = -1;              // device index as the process sees it; -1 for the host
  std::string bus_id = "cpu";  // PCI bus id "0000:0f:00", "cpu" for the host
  std::string model = "host memory";
};

// -M: the device's memory as the runtime sees it. -1 = unknown.
struct MemoryReport {
  int64_t total_bytes = -1;
  int64_t free_bytes = -1;
  int64_t peak_allocated_bytes = 0;  // high-water mark of this runtime's allocate() calls
};

// Marks points in the stream of the group's work and measures between them. On the host a mark
// is the steady clock's now (the caller has waited for the work before marking); on CUDA it is an
// event recorded on the group's stream, and elapsed_us() waits for the later mark (one sync).
class COLLIE_API Timer {
 public:
  virtual ~Timer() = default;
  // Returns the mark's index (0, 1, ...).
  virtual int mark() = 0;
  // Microseconds between marks a < b. May block until mark b has been reached.
  virtual double elapsed_us(int a, int b) = 0;
  // Room for `n` marks, so that marking allocates nothing in a timed loop (a hint).
  virtual void reserve(int /*n*/) {}
  // A host mark's steady-clock time (a loop reads the clock once per iteration, not twice);
  // nullopt for a device timer. Every runtime that is not asynchronous() gives it.
  // REQUIRES: 0 <= i < marks made.
  virtual std::optional<std::chrono::steady_clock::time_point> host_time(int /*i*/) const {
    return std::nullopt;
  }
};

// Work captured by DeviceRuntime::begin_capture/end_capture, replayed by launch().
class COLLIE_API CapturedGraph {
 public:
  virtual ~CapturedGraph() = default;
  virtual void launch() = 0;  // enqueues one replay on the group's stream
};

class COLLIE_API DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  DeviceRuntime() = default;
  DeviceRuntime(const DeviceRuntime&) = delete;
  DeviceRuntime& operator=(const DeviceRuntime&) = delete;

  // The device TensorViews over this runtime's buffers carry ({CPU, -1} on the host).
  virtual collie::Device device() const = 0;
  // True when buffers are plain host memory (the caller may read and write them directly).
  virtual bool host_accessible() const = 0;
  // True when the group's work runs asynchronously to the host and the timed loop should wait
  // once at its end (CUDA); false when every iteration is waited for (host backends).
  virtual bool asynchronous() const = 0;
  virtual Description describe() const = 0;
  virtual MemoryReport memory() const = 0;

  // At least `bytes` (never 0) bytes, 8-byte aligned, zero-filled (ordered before later ops).
  // Throws DeviceError when the device is out of memory (naming the size).
  virtual Buffer allocate(size_t bytes) = 0;
  virtual void copy_to_device(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) = 0;
  // Device to device, ordered with the group's ops (e.g. sendrecv's in-place staging).
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  // Waits until every op and copy issued so far has finished.
  virtual void synchronize() = 0;
  virtual std::unique_ptr<Timer> timer() = 0;

  // CUDA graphs (-G). supports_graphs() false: begin_capture throws DeviceError.
  virtual bool supports_graphs() const { return false; }
  // Between begin and end, the group's ops are recorded, not run; the caller must not wait on
  // their Works until the graph has been launched and synchronized.
  virtual void begin_capture();
  virtual std::unique_ptr<CapturedGraph> end_capture();

  // A view of `count` elements of `d` at `data` (a pointer into one of this runtime's buffers).
  TensorView view(void* data, size_t count, DType d) const {
    return TensorView{data, count, d, device(), Shape{}};
  }

 protected:
  friend class Buffer;
  virtual void release(void* data, size_t bytes) noexcept = 0;
};

// The host runtime every host backend shares (host_runtime.h). Never null.
COLLIE_API DeviceRuntime& host_runtime();

}  // namespace collie::device
