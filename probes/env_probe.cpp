#include "probes/env_probe.h"

#include <dirent.h>
#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "comm/registry.h"
#include "comm/rendezvous.h"
#include "core/env_snapshot.h"
#include "device/gpu_inventory.h"

namespace collie::probes {
namespace {

// The transport settings compared across ranks: the run's variables (core/env_snapshot.h) of
// the backends and transports, which must agree (the launcher's and rendezvous' differ by rank).
constexpr const char* kCompared[] = {"NCCL_", "GLOO_", "OMPI_", "UCX_"};
constexpr const char* kUnset = "<unset>";

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Value after "key:" on the first line of `path` that starts with `key`.
std::string field_of(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos) return trim(line.substr(colon + 1));
  }
  return "";
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(path.c_str())) {
    while (dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") out.push_back(n);
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

RankInfo describe_local(const std::vector<std::string>& environ_entries) {
  RankInfo info;
  info["host"] = local_hostname();
  info["cpu"] = field_of("/proc/cpuinfo", "model name");
  int cpus = 0;
  {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) cpus += line.rfind("processor", 0) == 0;
  }
  info["cpu_count"] = std::to_string(cpus);
  // The NVIDIA driver publishes its version and one folder per GPU under /proc/driver/nvidia.
  const std::string drv = trim(field_of("/proc/driver/nvidia/version", "NVRM version"));
  info["gpu_driver"] = drv.empty() ? "none" : drv;
  std::vector<std::string> models;
  for (const auto& g : list_dir("/proc/driver/nvidia/gpus"))
    models.push_back(field_of("/proc/driver/nvidia/gpus/" + g + "/information", "Model"));
  std::string gpus;
  for (const auto& m : models) gpus += (gpus.empty() ? "" : ", ") + m;
  info["gpus"] = gpus.empty() ? "none" : fmt::format("{} x [{}]", models.size(), gpus);
  // The CUDA runtime's view (model, count, bus ids, ECC, driver/CUDA/NCCL versions) when this
  // build has CUDA; "no CUDA driver" on a host without one.
  for (auto& [k, v] : device::gpu_inventory()) info[k] = v;
  for (const auto* b : backends()) info["version." + b->name] = b->version;
  for (const auto& m : missing_backends()) info["version." + m.name] = "not built: " + m.reason;
  for (const EnvEntry& e : collie::run_env(environ_entries)) {  // credentials' values redacted
    for (const char* p : kCompared)
      if (e.name.starts_with(p)) info["env." + e.name] = e.value;
  }
  return info;
}

bool per_rank_field(const std::string& field) {
  if (field == "host") return true;
  if (field.rfind("env.", 0) != 0) return false;
  if (field.rfind("env.OMPI_", 0) != 0) return false;
  // Launcher bookkeeping that is different on every rank (or host) by design. Open MPI spells
  // its MCA variables in lower case (OMPI_MCA_ess_base_vpid), so match without case.
  static const char* kPerRank[] = {"RANK",    "VPID",    "PID",          "JOBID",       "_URI",
                                   "HNP",     "SESSION", "NODE",         "LOCAL_SIZE",  "UNIVERSE",
                                   "APP_CTX", "ORTE_",   "PMIX",         "TOP_SESSION", "TMPDIR",
                                   "ESS_",    "NUM_APP", "FILE_LOCATION"};
  // Set by Open MPI's daemons for the processes they start on other nodes only (mpirun's own
  // node leaves it unset).
  if (field == "env.OMPI_MCA_plm") return true;
  std::string upper = field;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* k : kPerRank)
    if (upper.find(k) != std::string::npos) return true;
  return false;
}

std::string Inconsistency::to_text() const {
  std::string out = field + ":";
  bool first = true;
  for (const auto& [v, ranks] : values) {
    out += fmt::format("{} '{}' on rank{} {}", first ? "" : ";", v, ranks.size() == 1 ? "" : "s",
                       format_ranks(ranks));
    first = false;
  }
  return out;
}

EnvResult compare_env(const std::vector<std::optional<RankInfo>>& infos) {
  EnvResult res;
  res.world = static_cast<int>(infos.size());
  std::set<std::string> fields;
  for (size_t r = 0; r < infos.size(); ++r) {
    if (!infos[r]) {
      res.missing_ranks.push_back(static_cast<int>(r));
      res.ranks.emplace_back();
      continue;
    }
    res.ranks.push_back(*infos[r]);
    for (const auto& [k, v] : *infos[r]) fields.insert(k);
  }
  for (const auto& f : fields) {
    if (per_rank_field(f)) continue;
    Inconsistency inc;
    inc.field = f;
    for (size_t r = 0; r < infos.size(); ++r) {
      if (!infos[r]) continue;
      const auto it = infos[r]->find(f);
      inc.values[it == infos[r]->end() ? kUnset : it->second].push_back(static_cast<int>(r));
    }
    if (inc.values.size() > 1) res.inconsistencies.push_back(std::move(inc));
  }
  return res;
}

nlohmann::json EnvResult::to_json() const {
  nlohmann::json j;
  j["probe"] = "env";
  j["world_size"] = world;
  j["ranks"] = ranks;
  j["missing_ranks"] = missing_ranks;
  j["inconsistencies"] = nlohmann::json::array();
  for (const auto& i : inconsistencies)
    j["inconsistencies"].push_back({{"field", i.field}, {"values", i.values}});
  return j;
}

std::string EnvResult::to_text() const {
  std::string out = fmt::format("# env: {} ranks\n", world);
  // Fields shared by every rank once, then what differs.
  if (!ranks.empty()) {
    std::set<std::string> bad;
    for (const auto& i : inconsistencies) bad.insert(i.field);
    for (const auto& [k, v] : ranks.front()) {
      if (per_rank_field(k) || bad.count(k)) continue;
      out += fmt::format("#   {:<28} {}\n", k, v);
    }
    std::map<std::string, std::vector<int>> hosts;
    for (size_t r = 0; r < ranks.size(); ++r)
      if (ranks[r].count("host")) hosts[ranks[r].at("host")].push_back(static_cast<int>(r));
    // One line per host up to kHostLines hosts; beyond, how many hosts hold how many ranks.
    constexpr size_t kHostLines = 16;
    if (hosts.size() <= kHostLines) {
      for (const auto& [h, rs] : hosts)
        out += fmt::format("#   host {:<23} ranks {}\n", h, format_ranks(rs));
    } else {
      std::map<size_t, std::vector<std::string>> by_count;
      for (const auto& [h, rs] : hosts) by_count[rs.size()].push_back(h);
      for (const auto& [n, hs] : by_count)
        out += fmt::format("#   {} host(s) with {} rank(s) each: {}{}\n", hs.size(), n, hs.front(),
                           hs.size() > 1 ? fmt::format(" ... {}", hs.back()) : "");
    }
  }
  if (!missing_ranks.empty())
    out += fmt::format("MISSING: ranks {} did not report\n", format_ranks(missing_ranks));
  for (const auto& i : inconsistencies) out += "INCONSISTENT: " + i.to_text() + "\n";
  if (inconsistencies.empty() && missing_ranks.empty())
    out += "OK: every rank has the same setup\n";
  return out;
}

EnvResult run_env(ProbeContext& ctx) {
  const std::string tag = ctx.tag();
  const nlohmann::json mine = describe_local(process_environ());
  const auto rows = gather_to_root(ctx, tag + "/env", mine.dump(), ctx.timeout);
  if (ctx.rank != 0) return {};
  std::vector<std::optional<RankInfo>> infos;
  for (const auto& r : rows) {
    if (r)
      infos.push_back(nlohmann::json::parse(*r).get<RankInfo>());
    else
      infos.push_back(std::nullopt);
  }
  return compare_env(infos);
}

}  // namespace collie::probes
