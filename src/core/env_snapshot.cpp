#include "core/env_snapshot.h"

#include <algorithm>
#include <cctype>

extern char** environ;

namespace collie {

bool is_secret_env_name(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  for (std::string_view s : {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"}) {
    if (upper.find(s) != std::string::npos) return true;
  }
  return upper.ends_with("_KEY");
}

bool is_run_env_name(std::string_view name) {
  static constexpr std::string_view kPrefixes[] = {"COLLIE_",
                                                   "TORCH_",
                                                   "TORCHELASTIC_",
                                                   "MASTER_",
                                                   "RANK",
                                                   "WORLD_SIZE",
                                                   "LOCAL_",
                                                   "GROUP_RANK",
                                                   "ROLE_",
                                                   "GLOO_",
                                                   "NCCL_",
                                                   "UCX_",
                                                   "OMPI_",
                                                   "PMI_",
                                                   "PMIX_",
                                                   "SLURM_",
                                                   "CUDA_VISIBLE_DEVICES"};
  return std::any_of(std::begin(kPrefixes), std::end(kPrefixes),
                     [&](std::string_view p) { return name.starts_with(p); });
}

std::vector<EnvEntry> run_env(const std::vector<std::string>& entries) {
  std::vector<EnvEntry> out;
  for (const std::string& e : entries) {
    const size_t eq = e.find('=');
    if (eq == std::string::npos) continue;
    std::string name = e.substr(0, eq);
    if (!is_run_env_name(name)) continue;
    std::string value = is_secret_env_name(name) ? std::string(kRedacted) : e.substr(eq + 1);
    out.push_back(EnvEntry{std::move(name), std::move(value)});
  }
  return out;
}

std::vector<std::string> process_environ() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

}  // namespace collie
