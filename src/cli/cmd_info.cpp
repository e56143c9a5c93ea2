// `collie info`: what this build can do. For each backend built in, which ops run on CPU and on
// GPU (like the backend table in the torch.distributed docs), the dtypes and reduce ops it
// declares, the library versions found, which built backends cannot run on this host and why
// (nccl without libcudart/libnccl, a driver or a device), and which backends were not built and
// why. Everything comes from the backends' own registrations (comm/registry.h).
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command.h"
#include "comm/registry.h"

namespace collie::cli {
namespace {

std::vector<std::string> dtype_names(uint32_t bits) {
  std::vector<std::string> out;
  for (DType d : kAllDTypes) {
    if (bits & bit(d)) out.emplace_back(dtype_name(d));
  }
  return out;
}

std::vector<std::string> reduce_op_names(uint32_t bits) {
  std::vector<std::string> out;
  for (ReduceOp r : kAllReduceOps) {
    if (bits & bit(r)) out.emplace_back(reduce_op_name(r));
  }
  return out;
}

nlohmann::json to_json(const std::vector<const BackendRegistration*>& regs) {
  nlohmann::json j;
  j["backends"] = nlohmann::json::array();
  for (const auto* r : regs) {
    nlohmann::json b{{"name", r->name},
                     {"version", r->version},
                     {"unavailable", backend_unavailable_reason(r->name)}};
    for (OpType t : kAllOpTypes) {
      const OpCapability& c = r->capabilities.at(t);
      nlohmann::json op{{"cpu", c.cpu}, {"cuda", c.cuda}, {"dtypes", dtype_names(c.dtypes)}};
      if (has_reduce_op(t)) op["reduce_ops"] = reduce_op_names(c.reduce_ops);
      b["ops"][std::string(op_name(t))] = op;
    }
    j["backends"].push_back(b);
  }
  j["missing"] = nlohmann::json::array();
  for (const auto& m : missing_backends()) {
    j["missing"].push_back({{"name", m.name}, {"reason", m.reason}});
  }
  return j;
}

void print_table(const std::vector<const BackendRegistration*>& regs) {
  constexpr int kOpWidth = 16, kCell = 5;
  std::string head = fmt::format("{:<{}}", "Backend", kOpWidth);
  std::string sub = fmt::format("{:<{}}", "", kOpWidth);
  for (const auto* r : regs) {
    head += fmt::format("{:^{}}", r->name, 2 * kCell);
    sub += fmt::format("{:^{}}{:^{}}", "CPU", kCell, "GPU", kCell);
  }
  std::printf("%s\n%s\n", head.c_str(), sub.c_str());
  for (OpType t : kAllOpTypes) {
    std::string row = fmt::format("{:<{}}", op_name(t), kOpWidth);
    for (const auto* r : regs) {
      const OpCapability& c = r->capabilities.at(t);
      row += fmt::format("{:^{}}{:^{}}", c.cpu ? "yes" : "-", kCell, c.cuda ? "yes" : "-", kCell);
    }
    std::printf("%s\n", row.c_str());
  }
  // The table speaks torch's API names; `collie perf` takes nccl-tests' (and these too).
  std::printf(
      "(collie perf uses nccl-tests' names: all_to_all is alltoall (either name works), send "
      "and recv are timed together as sendrecv)\n\n");
  for (const auto* r : regs) {
    const OpCapability& c = r->capabilities.at(OpType::AllReduce);
    std::printf("%s: dtypes %s; reduce ops %s\n", r->name.c_str(),
                fmt::format("{}", fmt::join(dtype_names(c.dtypes), ", ")).c_str(),
                fmt::format("{}", fmt::join(reduce_op_names(c.reduce_ops), ", ")).c_str());
  }
}

int run_info(bool json) {
  const auto regs = backends();
  if (json) {
    std::printf("%s\n", to_json(regs).dump(2).c_str());
    return kExitOk;
  }
  if (regs.empty()) {
    std::printf("No backends built in.\n");
  } else {
    print_table(regs);
    std::printf("\nLibrary versions:\n");
    for (const auto* r : regs) {
      std::printf("  %-6s %s\n", r->name.c_str(), r->version.empty() ? "?" : r->version.c_str());
    }
  }
  bool header = false;
  for (const auto* r : regs) {
    const std::string why = backend_unavailable_reason(r->name);
    if (why.empty()) continue;
    if (!header) std::printf("\nCannot run on this host:\n");
    header = true;
    std::printf("  %-6s %s\n", r->name.c_str(), why.c_str());
  }
  const auto missing = missing_backends();
  if (!missing.empty()) {
    std::printf("\nNot built:\n");
    for (const auto& m : missing) std::printf("  %-6s %s\n", m.name.c_str(), m.reason.c_str());
  }
  return kExitOk;
}

const Command kCommand{"info",
                       "backends built in: ops per device, dtypes, reduce ops, library versions",
                       [](CLI::App& sub) {
                         auto json = std::make_shared<bool>(false);
                         sub.add_flag("--json", *json, "print the table as JSON");
                         return [json] { return run_info(*json); };
                       }};

}  // namespace

const Command& info_command() { return kCommand; }

}  // namespace collie::cli
