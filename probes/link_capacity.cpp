#include "probes/link_capacity.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "core/stats.h"
#include "discovery/net_route.h"
#include "probes/host_capacity.h"

namespace collie::probes {
namespace {

namespace fs = std::filesystem;

// A name from a listing or a rank's device, safe to join under a sysfs path.
bool plain_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos;
}

std::string first_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string this_host() {
  char name[256] = {0};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

constexpr int64_t kLoopbackBytes = 4 << 20;  // large enough to be bandwidth-bound
constexpr int kLoopbackMessages = 8;

}  // namespace

double pcie_link_gbps(const std::string& bus_id, const std::string& sysfs) {
  std::string id = bus_id;
  if (id.size() == 10 && id.find('.') == std::string::npos) id += ".0";  // "0000:0f:00"
  if (!plain_name(id)) return 0;
  const fs::path dev = fs::path(sysfs) / "bus/pci/devices" / id;
  double gts = 0;
  int width = 0;
  if (!(std::istringstream(first_line(dev / "current_link_speed")) >> gts) || gts <= 0) return 0;
  if (!(std::istringstream(first_line(dev / "current_link_width")) >> width) || width <= 0)
    return 0;
  const double encoding = gts >= 8 ? 128.0 / 130.0 : 0.8;
  return gts * width * encoding / 8;  // GT/s per lane -> GB/s
}

double infiniband_gbps(const std::string& sysfs, std::string* port) {
  std::error_code ec;
  double best = 0;
  for (const auto& d : fs::directory_iterator(fs::path(sysfs) / "class/infiniband", ec)) {
    std::error_code ec2;
    for (const auto& p : fs::directory_iterator(d.path() / "ports", ec2)) {
      // "4: ACTIVE": a port that is down carries nothing.
      if (first_line(p.path() / "state").find("ACTIVE") == std::string::npos) continue;
      double gbit = 0;
      if (!(std::istringstream(first_line(p.path() / "rate")) >> gbit) || gbit <= 0) continue;
      if (gbit / 8 > best) {
        best = gbit / 8;
        *port = d.path().filename().string() + "/" + p.path().filename().string();
      }
    }
  }
  return best;
}

double memcpy_gbps(int64_t bytes, int reps) {
  const size_t n = static_cast<size_t>(std::max<int64_t>(bytes, 1));
  std::vector<char> a(n, 1), b(n, 2);
  std::vector<double> samples;
  for (int i = 0; i < reps + 1; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    a[i % n] = b[(i + 1) % n];  // keeps the copies from being elided
    if (i > 0 && s > 0) samples.push_back(static_cast<double>(n) / s / 1e9);
  }
  return samples.empty() ? 0 : median(samples);
}

std::string route_interface(const std::string& host) {
  const auto src = net::route_source(host);
  if (!src) return "";
  for (const auto& a : net::interface_addresses())
    if (a.address == *src) return a.iface;
  return "";
}

reports::LinkCapacity link_capacity(const reports::RunMeta& meta, const Env& env,
                                    const std::string& store_host, const std::string& sysfs) {
  reports::LinkCapacity c;
  c.host = this_host();
  const std::set<std::string> hosts(meta.hosts.begin(), meta.hosts.end());
  const std::string& backend = meta.backend;
  if (hosts.size() <= 1) {
    const std::string where = fmt::format("every rank runs on {}", c.host);
    if (backend == "gloo") {
      std::string error;
      c.kind = "loopback-tcp";
      c.gbps =
          loopback_tcp_gbps(kLoopbackBytes, kLoopbackMessages, std::chrono::seconds(5), &error);
      c.what = c.gbps > 0 ? fmt::format(
                                "TCP over 127.0.0.1 with 4 MiB messages, measured "
                                "in-process; {}",
                                where)
                          : "loopback TCP could not be measured: " + error;
    } else if (backend == "mpi") {
      c.kind = "memcpy";
      c.gbps = memcpy_gbps(kLoopbackBytes * 16, 8);
      c.what = fmt::format(
          "this host's memcpy of 64 MiB, measured in-process (MPI moves data "
          "between local ranks through shared memory); {}",
          where);
    } else {
      c.kind = "pcie";
      const std::string bus = meta.devices.empty() ? "" : meta.devices.front().bus_id;
      c.gbps = pcie_link_gbps(bus, sysfs);
      c.what = c.gbps > 0 ? fmt::format(
                                "rank 0's GPU {} PCIe link (sysfs current_link_speed x "
                                "width); NVLink is not read, NVLink-connected GPUs "
                                "exceed it; {}",
                                bus, where)
                          : fmt::format("the PCIe link of GPU '{}' is not in sysfs", bus);
    }
    return c;
  }
  std::string iface;
  if (backend == "gloo") iface = data_interface(backend, env, store_host);
  if (backend == "nccl") {
    std::string port;
    c.gbps = infiniband_gbps(sysfs, &port);
    if (c.gbps > 0) {
      c.kind = "infiniband";
      c.what = fmt::format("InfiniBand port {}'s rate (sysfs), the fastest active one here", port);
      return c;
    }
  }
  if (iface.empty()) {
    for (const auto& h : hosts)
      if (h != c.host && (iface = route_interface(h)) != "") break;
  }
  c.kind = "nic";
  c.gbps = interface_line_gbps(iface, sysfs);
  c.what = c.gbps > 0 ? fmt::format(
                            "{}'s stated speed (sysfs), the interface {} data leaves "
                            "this host by",
                            iface, backend)
           : iface.empty() ? std::string("no interface to another host is known here")
                           : fmt::format("{} states no speed (a virtual NIC?)", iface);
  return c;
}

}  // namespace collie::probes
