#include "perf/run_meta.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ctime>

#include "comm/registry.h"
#include "perf/host_exchange.h"

namespace collie::perf {

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::vector<int> fill_run_meta(ProcessGroup& pg, device::DeviceRuntime& dev, Millis timeout,
                               const std::string& version, reports::RunMeta& m) {
  // Per rank: host name, pid, device index, bus id, device model (NUL-terminated fields).
  constexpr size_t kHost = 64, kBus = 24, kModel = 96;
  constexpr size_t kPid = kHost, kIndex = kPid + 8, kBusAt = kIndex + 8, kModelAt = kBusAt + kBus;
  constexpr size_t kStride = kModelAt + kModel;
  std::vector<uint8_t> mine(kStride, 0), all(kStride * pg.size());
  gethostname(reinterpret_cast<char*>(mine.data()), kHost - 1);
  const int64_t pid = ::getpid();
  std::memcpy(mine.data() + kPid, &pid, 8);
  const device::Description desc = dev.describe();
  const int64_t index = desc.index;
  std::memcpy(mine.data() + kIndex, &index, 8);
  std::memcpy(mine.data() + kBusAt, desc.bus_id.data(), std::min(desc.bus_id.size(), kBus - 1));
  std::memcpy(mine.data() + kModelAt, desc.model.data(), std::min(desc.model.size(), kModel - 1));
  all_gather_host(pg, TensorView::cpu(mine.data(), mine.size(), DType::UInt8),
                  TensorView::cpu(all.data(), all.size(), DType::UInt8), timeout);
  std::vector<int> pids;
  for (int r = 0; r < pg.size(); ++r) {
    const uint8_t* p = all.data() + r * kStride;
    m.hosts.emplace_back(reinterpret_cast<const char*>(p));
    int64_t rp = 0, ri = 0;
    std::memcpy(&rp, p + kPid, 8);
    std::memcpy(&ri, p + kIndex, 8);
    pids.push_back(static_cast<int>(rp));
    m.devices.push_back(reports::RankDevice{static_cast<int>(ri),
                                            reinterpret_cast<const char*>(p + kBusAt),
                                            reinterpret_cast<const char*>(p + kModelAt)});
  }
  m.version = version;
  m.backend = pg.backend_name();
  m.world_size = pg.size();
  if (const BackendRegistration* b = find_backend(pg.backend_name()); b && !b->version.empty())
    m.library_versions[b->name] = b->version;
  m.library_versions["collie"] = version;
  m.started_at = now_iso8601();
  return pids;
}

}  // namespace collie::perf
