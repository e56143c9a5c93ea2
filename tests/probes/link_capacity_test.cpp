// "Is this normal?" (probes/link_capacity.h): PCIe and InfiniBand rates from a sysfs tree (a
// temporary one, so every answer sysfs gives can be tried), the reference each kind of run gets,
// real in-process loopback and memcpy measurements, and an accept perf check's lines.
#include "probes/link_capacity.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/env.h"
#include "probes/accept.h"

namespace collie::probes {
namespace {

namespace fs = std::filesystem;

struct Sysfs {
  fs::path root = fs::temp_directory_path() / ("collie_linkcap_" + std::to_string(getpid()));
  ~Sysfs() { fs::remove_all(root); }
  void write(const fs::path& rel, const std::string& text) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  }
  std::string path() const { return root.string(); }
};

TEST(LinkCapacity, PcieLinkFromSysfs) {
  Sysfs s;
  s.write("bus/pci/devices/0000:0f:00.0/current_link_speed", "32.0 GT/s PCIe\n");
  s.write("bus/pci/devices/0000:0f:00.0/current_link_width", "16\n");
  s.write("bus/pci/devices/0000:10:00.0/current_link_speed", "2.5 GT/s PCIe\n");
  s.write("bus/pci/devices/0000:10:00.0/current_link_width", "4\n");
  s.write("bus/pci/devices/0000:11:00.0/current_link_speed", "Unknown\n");
  s.write("bus/pci/devices/0000:11:00.0/current_link_width", "16\n");
  // Gen5 x16: 32 GT/s x 16 lanes x 128/130 / 8 bits = 63.0 GB/s.
  EXPECT_NEAR(pcie_link_gbps("0000:0f:00", s.path()), 63.015, 0.01);
  EXPECT_NEAR(pcie_link_gbps("0000:0f:00.0", s.path()), 63.015, 0.01);
  EXPECT_DOUBLE_EQ(pcie_link_gbps("0000:10:00", s.path()), 1.0);  // Gen1 x4, 8b/10b
  EXPECT_DOUBLE_EQ(pcie_link_gbps("0000:11:00", s.path()), 0);    // speed not stated
  EXPECT_DOUBLE_EQ(pcie_link_gbps("0000:12:00", s.path()), 0);    // no such device
  EXPECT_DOUBLE_EQ(pcie_link_gbps("cpu", s.path()), 0);
  EXPECT_DOUBLE_EQ(pcie_link_gbps("../../etc", s.path()), 0);
}

TEST(LinkCapacity, FastestActiveInfinibandPort) {
  Sysfs s;
  std::string port;
  EXPECT_DOUBLE_EQ(infiniband_gbps(s.path(), &port), 0);
  s.write("class/infiniband/mlx5_0/ports/1/rate", "200 Gb/sec (4X HDR)\n");
  s.write("class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  s.write("class/infiniband/mlx5_1/ports/1/rate", "400 Gb/sec (4X NDR)\n");
  s.write("class/infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
  EXPECT_DOUBLE_EQ(infiniband_gbps(s.path(), &port), 25.0);
  EXPECT_EQ(port, "mlx5_0/1");
}

TEST(LinkCapacity, InProcessMeasurements) {
  EXPECT_GT(memcpy_gbps(1 << 20, 3), 0.01);  // any host copies more than 10 MB/s
  reports::RunMeta m;
  m.backend = "gloo";
  m.hosts = {"h", "h"};
  const MapEnv none(MapEnv::Map{});
  const reports::LinkCapacity c = link_capacity(m, none, "127.0.0.1");
  EXPECT_EQ(c.kind, "loopback-tcp");
  EXPECT_GT(c.gbps, 0.001) << c.what;
  EXPECT_NE(c.what.find("TCP over 127.0.0.1"), std::string::npos) << c.what;
  m.backend = "mpi";
  EXPECT_EQ(link_capacity(m, none, "127.0.0.1").kind, "memcpy");
}

TEST(LinkCapacity, ReferencePerKindOfRun) {
  Sysfs s;
  s.write("bus/pci/devices/0000:0f:00.0/current_link_speed", "16.0 GT/s PCIe\n");
  s.write("bus/pci/devices/0000:0f:00.0/current_link_width", "16\n");
  s.write("class/net/lo/speed", "");  // loopback states no speed
  const MapEnv none(MapEnv::Map{});
  reports::RunMeta m;
  m.backend = "nccl";
  m.hosts = {"h", "h"};
  m.devices = {reports::RankDevice{0, "0000:0f:00", "GPU"}, reports::RankDevice{1, "", ""}};
  reports::LinkCapacity c = link_capacity(m, none, "127.0.0.1", s.path());
  EXPECT_EQ(c.kind, "pcie");
  EXPECT_NEAR(c.gbps, 31.5, 0.01);
  EXPECT_NE(c.what.find("NVLink is not read"), std::string::npos);
  m.devices = {reports::RankDevice{}};  // host memory: no PCIe link to read
  c = link_capacity(m, none, "127.0.0.1", s.path());
  EXPECT_DOUBLE_EQ(c.gbps, 0);
  EXPECT_NE(c.what.find("not in sysfs"), std::string::npos) << c.what;
  // Several hosts, nccl: the InfiniBand port.
  m.hosts = {"h1", "h2"};
  s.write("class/infiniband/mlx5_0/ports/1/rate", "400 Gb/sec (4X NDR)\n");
  s.write("class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  c = link_capacity(m, none, "127.0.0.1", s.path());
  EXPECT_EQ(c.kind, "infiniband");
  EXPECT_DOUBLE_EQ(c.gbps, 50);
  // Several hosts, gloo bound to lo (a loopback rendezvous): lo states no speed.
  m.backend = "gloo";
  c = link_capacity(m, none, "127.0.0.1", s.path());
  EXPECT_EQ(c.kind, "nic");
  EXPECT_DOUBLE_EQ(c.gbps, 0);
  EXPECT_NE(c.what.find("lo states no speed"), std::string::npos) << c.what;
}

TEST(LinkCapacity, AcceptPerfCheckSaysTheShare) {
  CheckOutcome o;
  reports::ResultRow row;
  row.collective = "all_reduce";
  row.size_bytes = 1 << 20;
  row.busbw_gbps = 0.5;
  o.rows = {row};
  add_capacity(o, reports::LinkCapacity{"nic", "eth0's stated speed (sysfs)", "h1", 1.25});
  EXPECT_NE(o.text.find("# all_reduce: peak busbw 0.5 GB/s (at 1048576 B) is 40 % of what this "
                        "link can do"),
            std::string::npos)
      << o.text;
  EXPECT_DOUBLE_EQ(o.metrics.at("capacity_pct"), 40);
  EXPECT_EQ(o.details["capacity"]["kind"], "nic");
  EXPECT_TRUE(o.passed);  // says, decides nothing
}

}  // namespace
}  // namespace collie::probes
