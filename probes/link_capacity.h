#pragma once
// "Is this normal?" for collie perf and accept's perf checks: what the link a run's data crossed
// can carry (reports::LinkCapacity), which its bus bandwidth is held against. Every rank on one
// host: gloo's TCP over 127.0.0.1 measured in-process (host_capacity.h), mpi's shared memory as
// this host's memcpy measured in-process, nccl's GPU by its PCIe link (sysfs; NVLink is not read,
// so NVLink-connected GPUs go past 100 %). Several hosts: gloo's data interface's stated speed, an
// nccl run's fastest InfiniBand port, else the interface that routes to another host (sysfs).
// The measurements run on the calling thread (loopback starts one thread and joins it); call it
// once the benchmark is over, so nothing else of the run shares the host. Thread-compatible.
#include <cstdint>
#include <string>

#include "reports/result.h"

namespace collie {
class Env;
}  // namespace collie

namespace collie::probes {

// GB/s of a PCIe device's link: SYSFS/bus/pci/devices/BUS.0/current_link_speed ("16.0 GT/s
// PCIe") times current_link_width, less the 128b/130b encoding (8b/10b below 8 GT/s). `bus_id`
// as RankDevice::bus_id ("0000:0f:00"; a function ".N" is kept). 0 when unknown.
double pcie_link_gbps(const std::string& bus_id, const std::string& sysfs = "/sys");

// The fastest active InfiniBand port: SYSFS/class/infiniband/DEV/ports/N/rate ("400 Gb/sec (4X
// NDR)") in GB/s, and its "DEV/N" in *port (REQUIRES: port != nullptr). 0 when there is none.
double infiniband_gbps(const std::string& sysfs, std::string* port);

// Median GB/s of `reps` copies of `bytes` between two buffers of this process (after one warm-up
// copy). REQUIRES: bytes >= 1, reps >= 1.
double memcpy_gbps(int64_t bytes, int reps);

// The local interface whose route reaches `host` ("" when it does not resolve or has no route).
std::string route_interface(const std::string& host);

// The reference for a run whose ranks ran on meta.hosts / meta.devices over meta.backend, taken
// on this host (`store_host`: the rendezvous host, which decides gloo's data interface). Never
// throws: gbps 0 with `what` saying why when nothing could be measured or read.
reports::LinkCapacity link_capacity(const reports::RunMeta& meta, const Env& env,
                                    const std::string& store_host,
                                    const std::string& sysfs = "/sys");

}  // namespace collie::probes
