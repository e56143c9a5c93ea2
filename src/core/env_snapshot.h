#pragma once
// The one snapshot of the environment that everything copying it somewhere others read uses (the
// -J results file's "env" list, the debug server's /v1/config, the env probe's report): which
// variables shape a collective run, and which of them hold credentials. One list and one rule,
// so a variable recorded in one place is recorded in all, and a credential hidden in one is
// hidden in all. Pure functions, thread-safe.
#include <string>
#include <string_view>
#include <vector>

namespace collie {

// True when the name contains TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL, or ends in _KEY
// (any case): COLLIE_STORE_SECRET, COLLIE_DEBUG_TOKEN, a cluster's DB_PASSWORD, an API_KEY.
bool is_secret_env_name(std::string_view name);

// True for the variables that shape a run: collie's, the launchers' (torchrun, Slurm, Open MPI,
// PMI), the rendezvous (MASTER_*, RANK, WORLD_SIZE, LOCAL_*) and the backends' and transports'
// (GLOO_, NCCL_, UCX_, CUDA_VISIBLE_DEVICES).
bool is_run_env_name(std::string_view name);

// What a credential's value reads as in every snapshot (its name stays, so a reader sees it set).
inline constexpr std::string_view kRedacted = "<redacted>";

struct EnvEntry {
  std::string name;
  std::string value;  // kRedacted for a credential
};

// The run's variables among `entries` ("NAME=value", as in `environ`), in their order; entries
// without '=' are skipped.
std::vector<EnvEntry> run_env(const std::vector<std::string>& entries);

// This process's environment as "NAME=value" entries.
std::vector<std::string> process_environ();

}  // namespace collie
