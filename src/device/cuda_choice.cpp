#include "device/cuda_choice.h"

#include <fmt/format.h>

#include <charconv>

#include "core/printable.h"

namespace collie::device {
namespace {

std::string visible_note(const std::optional<std::string>& v) {
  return v ? fmt::format("CUDA_VISIBLE_DEVICES={}", quote(*v)) : "CUDA_VISIBLE_DEVICES unset";
}

}  // namespace

std::string cuda_version_string(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

std::string cuda_unavailable_line(const CudaState& s) {
  if (!s.library_error.empty()) return s.library_error;
  if (s.driver_version == 0) {
    return "no CUDA driver: libcuda could not be loaded on this host; run on a node with an "
           "NVIDIA GPU and its driver, or use --backend gloo";
  }
  if (s.runtime_version > 0 && s.driver_version < s.runtime_version) {
    return fmt::format(
        "CUDA driver {} is older than the CUDA runtime {} collie was built with; update the "
        "driver or rebuild collie against an older CUDA toolkit",
        cuda_version_string(s.driver_version), cuda_version_string(s.runtime_version));
  }
  if ((s.count_ok && s.count == 0) || s.error_name == "cudaErrorNoDevice") {
    return fmt::format("no visible CUDA device ({}); check nvidia-smi and CUDA_VISIBLE_DEVICES",
                       visible_note(s.visible_devices));
  }
  if (!s.count_ok) {
    return fmt::format("CUDA could not list devices: {} ({}); check nvidia-smi and the driver",
                       s.error_text, s.error_name.empty() ? "no error name" : s.error_name);
  }
  return {};
}

DeviceChoice choose_cuda_device(int count, std::optional<int> local_rank, int rank,
                                const std::optional<std::string>& explicit_index,
                                const std::optional<std::string>& visible_devices) {
  DeviceChoice c;
  if (explicit_index && !explicit_index->empty()) {
    int v = -1;
    const char* b = explicit_index->data();
    const char* e = b + explicit_index->size();
    const auto r = std::from_chars(b, e, v);
    if (r.ec != std::errc() || r.ptr != e || v < 0) {
      c.error = fmt::format("COLLIE_CUDA_DEVICE={} is not a device index (0..{})",
                            quote(*explicit_index), count - 1);
      return c;
    }
    if (v >= count) {
      c.error = fmt::format(
          "CUDA device index {} is out of range: {} visible device{} ({}); set "
          "COLLIE_CUDA_DEVICE to 0..{} or unset it",
          v, count, count == 1 ? "" : "s", visible_note(visible_devices), count - 1);
      return c;
    }
    c.index = v;
    return c;
  }
  c.index = local_rank.value_or(rank) % count;
  return c;
}

}  // namespace collie::device
