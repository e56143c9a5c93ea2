#include "perf/test_hooks.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <thread>

namespace collie::perf {

void stall_if_asked(const TestHooks& h, int rank, Millis timeout, StepTracker& steps,
                    const std::string& what) {
  if (h.stall_rank != rank || h.stall_file.empty()) return;
  steps.enter(what + ": test stall");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::filesystem::exists(h.stall_file) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

CpuWork::CpuWork() : buf_(16384, 1.0f) {}

float CpuWork::run(int64_t units) {
  float acc = 0;
  for (int64_t u = 0; u < units; ++u)
    for (auto& x : buf_) acc += (x = x * 0.999f + 0.001f);
  return acc;
}

void corrupt_if_asked(const TestHooks& h, int rank, char* got, DType dt, size_t checked) {
  if (h.corrupt_rank != rank || h.corrupt_offset < 0) return;
  if (static_cast<size_t>(h.corrupt_offset) >= checked) return;
  auto* p = reinterpret_cast<uint8_t*>(got) + h.corrupt_offset * dtype_size(dt);
  p[0] ^= 0x5a;  // low byte: changes the value in every dtype
}

}  // namespace collie::perf
