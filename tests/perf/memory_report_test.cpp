// memory_report_lines (src/perf/memory_report.h): the -M lines, checked exactly, without a
// ProcessGroup (tests/perf/device_seam_test.cpp runs -M through the driver).
#include "perf/memory_report.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace collie::perf {
namespace {

device::MemoryReport report(int64_t total, int64_t free, int64_t peak) {
  device::MemoryReport m;
  m.total_bytes = total;
  m.free_bytes = free;
  m.peak_allocated_bytes = peak;
  return m;
}

TEST(PerfMemoryReport, OneLinePerRankInKibOrMib) {
  const std::vector<device::MemoryReport> ranks = {
      report(int64_t{1} << 30, int64_t{512} << 20, 4096),
      report(int64_t{3} << 20, (int64_t{1} << 20) - 1024, (int64_t{3} << 20) / 2)};
  EXPECT_EQ(memory_report_lines(ranks, false),
            (std::vector<std::string>{
                "#  Rank  0 memory: peak 4.0 KiB in perf buffers; device 1024.0 MiB total, "
                "512.0 MiB free",
                "#  Rank  1 memory: peak 1.5 MiB in perf buffers; device 3.0 MiB total, "
                "1023.0 KiB free"}));
}

TEST(PerfMemoryReport, HostMemoryAndUnknownSizes) {
  std::vector<device::MemoryReport> ranks(11, report(-1, -1, 0));
  ranks[10].peak_allocated_bytes = 1536;
  const std::vector<std::string> lines = memory_report_lines(ranks, true);
  ASSERT_EQ(lines.size(), 11u);
  EXPECT_EQ(lines[0], "#  Rank  0 memory: peak 0.0 KiB in perf buffers; host ? total, ? free");
  EXPECT_EQ(lines[10], "#  Rank 10 memory: peak 1.5 KiB in perf buffers; host ? total, ? free");
}

TEST(PerfMemoryReport, NoRanksNoLines) { EXPECT_TRUE(memory_report_lines({}, true).empty()); }

}  // namespace
}  // namespace collie::perf
