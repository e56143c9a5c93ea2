#include "perf/memory_report.h"

#include <fmt/format.h>

#include "core/size.h"
#include "perf/host_exchange.h"

namespace collie::perf {

std::vector<device::MemoryReport> gather_memory(ProcessGroup& pg, device::DeviceRuntime& dev,
                                                Millis timeout) {
  const device::MemoryReport m = dev.memory();
  std::vector<double> mine = {static_cast<double>(m.total_bytes), static_cast<double>(m.free_bytes),
                              static_cast<double>(m.peak_allocated_bytes)};
  std::vector<double> all(mine.size() * pg.size());
  all_gather_host(pg, TensorView::cpu(mine.data(), mine.size(), DType::Float64),
                  TensorView::cpu(all.data(), all.size(), DType::Float64), timeout);
  std::vector<device::MemoryReport> ranks(pg.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    const double* p = all.data() + r * mine.size();
    ranks[r].total_bytes = static_cast<int64_t>(p[0]);
    ranks[r].free_bytes = static_cast<int64_t>(p[1]);
    ranks[r].peak_allocated_bytes = static_cast<int64_t>(p[2]);
  }
  return ranks;
}

std::vector<std::string> memory_report_lines(const std::vector<device::MemoryReport>& ranks,
                                             bool host_accessible) {
  std::vector<std::string> lines;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const device::MemoryReport& m = ranks[r];
    lines.push_back(
        fmt::format("#  Rank {:2d} memory: peak {} in perf buffers; {} {} total, {} free", r,
                    memory_label(m.peak_allocated_bytes), host_accessible ? "host" : "device",
                    memory_label(m.total_bytes), memory_label(m.free_bytes)));
  }
  return lines;
}

}  // namespace collie::perf
