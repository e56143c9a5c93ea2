#pragma once
// `env` probe: each rank describes itself (hostname, CPU model, GPU model and driver if any, the
// CUDA runtime's GPU inventory as gpu.* fields (device/gpu_inventory.h),
// the backends' library versions from comm/registry.h, and NCCL_*, GLOO_*, OMPI_*, UCX_*
// variables); rank 0 gathers the descriptions through the store and flags every field whose
// value differs across ranks (fields that are per-rank by nature, such as the hostname or
// OMPI_COMM_WORLD_RANK, are not compared).
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "probes/context.h"

namespace collie::probes {

// Field name -> value, e.g. "cpu" -> "AMD EPYC 7763", "version.gloo" -> "...", "env.NCCL_IB_HCA".
using RankInfo = std::map<std::string, std::string>;

// This process's description; `environ_entries` supplies the variables ("NAME=value" entries,
// core/env_snapshot.h's process_environ() for this process): the transport settings among the
// run's variables, credentials' values redacted.
RankInfo describe_local(const std::vector<std::string>& environ_entries);

struct Inconsistency {
  std::string field;
  // value -> ranks with it ("<unset>" for ranks without the field)
  std::map<std::string, std::vector<int>> values;
  std::string to_text() const;  // "env.NCCL_IB_HCA: 'mlx5_0' on ranks 0-5; '<unset>' on 6, 7"
};

struct EnvResult {
  int world = 0;
  std::vector<RankInfo> ranks;
  std::vector<int> missing_ranks;
  std::vector<Inconsistency> inconsistencies;
  nlohmann::json to_json() const;
  std::string to_text() const;
};

// True for fields that legitimately differ per rank (not compared).
bool per_rank_field(const std::string& field);

// Compares descriptions; entries that are nullopt are missing ranks. Exposed for tests.
EnvResult compare_env(const std::vector<std::optional<RankInfo>>& infos);

EnvResult run_env(ProbeContext& ctx);

}  // namespace collie::probes
