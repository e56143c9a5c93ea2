// What a host can do (probes/host_capacity.h): the stated interface speed from a sysfs tree
// (a temporary one, so every answer sysfs gives can be tried) and a real loopback measurement.
#include "probes/host_capacity.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "core/env.h"

namespace collie::probes {
namespace {

namespace fs = std::filesystem;

TEST(HostCapacity, StatedSpeedOfTheInterface) {
  const fs::path root = fs::temp_directory_path() / ("collie_sysfs_" + std::to_string(getpid()));
  auto speed = [&](const std::string& iface, const std::string& text) {
    fs::create_directories(root / "class/net" / iface);
    std::ofstream(root / "class/net" / iface / "speed") << text;
  };
  speed("eth0", "10000\n");
  speed("veth1", "-1\n");  // virtual NICs that state nothing
  speed("ens3", "0\n");
  speed("bad", "fast\n");
  const std::string sys = root.string();
  EXPECT_DOUBLE_EQ(interface_line_gbps("eth0", sys), 1.25);  // 10 Gb/s = 1.25 GB/s
  EXPECT_DOUBLE_EQ(interface_line_gbps("veth1", sys), 0);
  EXPECT_DOUBLE_EQ(interface_line_gbps("ens3", sys), 0);
  EXPECT_DOUBLE_EQ(interface_line_gbps("bad", sys), 0);
  EXPECT_DOUBLE_EQ(interface_line_gbps("missing", sys), 0);
  EXPECT_DOUBLE_EQ(interface_line_gbps("", sys), 0);
  EXPECT_DOUBLE_EQ(interface_line_gbps("../eth0", sys), 0) << "a name, not a path";
  fs::remove_all(root);
}

TEST(HostCapacity, LoopbackIsMeasured) {
  // The rate must agree with the time the call took. Its 3 messages' median rate is at least
  // 2/3 of their harmonic mean (the two slower messages alone take at least 2 x bytes/median),
  // and that is at least the average over the whole call, which also spends time on the
  // connection and a warm-up message: so the median is at least half the call's average. A
  // result in the wrong unit, or timed over the wrong span, misses that floor or the ceiling (no
  // TCP stack moves 1000 GB/s).
  constexpr int64_t kBytes = 4 << 20;
  constexpr int kMessages = 3;
  std::string error;
  const auto t0 = std::chrono::steady_clock::now();
  const double gbps = loopback_tcp_gbps(kBytes, kMessages, std::chrono::seconds(10), &error);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(error.empty()) << error;
  const double average = static_cast<double>(kBytes) * kMessages / wall / 1e9;
  EXPECT_GE(gbps, average / 2) << "the call averaged " << average << " GB/s over " << wall << " s";
  EXPECT_LT(gbps, 1000);
}

TEST(HostCapacity, DataInterfaceIsGloosChoice) {
  // Gloo with nothing set and a loopback rendezvous binds lo; other backends pick their own.
  const MapEnv none(MapEnv::Map{});
  EXPECT_EQ(data_interface("gloo", none, "127.0.0.1"), "lo");
  EXPECT_EQ(data_interface("mpi", none, "127.0.0.1"), "");
  const HostCapacity c =
      measure_host_capacity("gloo", none, "127.0.0.1", 1 << 16, 2, std::chrono::seconds(10));
  EXPECT_EQ(c.iface, "lo");
  EXPECT_DOUBLE_EQ(c.line_gbps, 0);  // lo states no speed
  EXPECT_GT(c.loopback_gbps, 0);
}

}  // namespace
}  // namespace collie::probes
