#include "metrics/inspector_format.h"

#include <fmt/format.h>

#include <array>

namespace collie {
namespace {

constexpr std::array<std::string_view, 5> kUnits = {"B", "KB", "MB", "GB", "TB"};

}  // namespace

int inspector_size_unit(uint64_t bytes) {
  int u = 0;
  while (u + 1 < static_cast<int>(kUnits.size()) && (bytes >> (10 * (u + 1))) != 0) ++u;
  return u;
}

std::string_view inspector_op_name(OpType op) { return traits(op).inspector; }

uint64_t inspector_message_bytes(OpType op, uint64_t input_bytes, int nranks) {
  // What one rank's part of the op is: the output of a reduce_scatter, else the input.
  if (traits(op).count == OpTraits::Count::Output && nranks > 1) return input_bytes / nranks;
  return input_bytes;
}

uint64_t inspector_size_bucket(uint64_t bytes) {
  const int u = inspector_size_unit(bytes);
  return (bytes >> (10 * u)) << (10 * u);
}

std::string inspector_message_size(uint64_t bytes) {
  if (bytes == 0) return "0B";
  const int u = inspector_size_unit(bytes);
  const uint64_t lower = bytes >> (10 * u);
  return fmt::format("{}-{}{}", lower, lower + 1, kUnits[u]);
}

double inspector_bus_bandwidth_gbs(OpType op, uint64_t message_bytes, int nranks, double exec_us) {
  if (exec_us <= 0 || nranks < 1) return 0;
  const double n = nranks;
  const OpTraits& t = traits(op);
  const double traffic = static_cast<double>(message_bytes) * (t.traffic_n ? n : 1);
  double factor = 1;
  switch (t.bus) {
    case OpTraits::BusFactor::TwoNMinus1OverN:
      factor = 2 * (n - 1) / n;
      break;
    case OpTraits::BusFactor::NMinus1OverN:
      factor = (n - 1) / n;
      break;
    case OpTraits::BusFactor::One:
      break;
    case OpTraits::BusFactor::None:
      return 0;
  }
  return traffic / 1e9 / (exec_us * 1e-6) * factor;
}

}  // namespace collie
