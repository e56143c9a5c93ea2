#include "discovery/launcher_rendezvous.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "core/env.h"
#include "core/error.h"
#include "core/printable.h"
#include "discovery/hostlist.h"

namespace collie {
namespace {

uint16_t parse_port(const std::string& s) {
  int port = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), port);
  if (ec != std::errc() || p != s.data() + s.size() || port <= 0 || port > 65535) {
    throw InvalidArgument(fmt::format("MASTER_PORT {} is not a TCP port (1-65535)", quote(s)));
  }
  return static_cast<uint16_t>(port);
}

std::string nonempty(const Env& env, const char* name) { return env.get(name).value_or(""); }

int plan_port_after(const std::string& port) { return parse_port(port) + 1; }

}  // namespace

std::vector<uint16_t> slurm_step_ports(long long job, long long step, int count) {
  std::vector<uint16_t> out;
  const unsigned long long h =
      static_cast<unsigned long long>(job) * 131u + static_cast<unsigned long long>(step) * 7919u;
  for (int k = 0; static_cast<int>(out.size()) < count; ++k) {
    const auto p =
        static_cast<uint16_t>(20000 + (h + static_cast<unsigned long long>(k) * 4099u) % 40000);
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

RendezvousPlan plan_env_rendezvous(const Env& env) {
  RendezvousPlan plan;
  const std::string addr = nonempty(env, "MASTER_ADDR");
  const std::string port = nonempty(env, "MASTER_PORT");
  if (!addr.empty() || !port.empty()) {
    if (addr.empty() || port.empty()) {
      throw InvalidArgument(
          fmt::format("{} is set but {} is not; set both (or neither, under srun or mpirun)",
                      addr.empty() ? "MASTER_PORT" : "MASTER_ADDR",
                      addr.empty() ? "MASTER_ADDR" : "MASTER_PORT"));
    }
    plan.kind = RendezvousPlan::Kind::Explicit;
    plan.host = addr;
    plan.ports = {parse_port(port)};
    plan.reason = fmt::format("MASTER_ADDR={} MASTER_PORT={}", addr, port);
    std::string agent = nonempty(env, "TORCHELASTIC_USE_AGENT_STORE");
    for (auto& c : agent) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (agent == "true" || agent == "1") {
      // torchrun's agent serves torch's TCPStore on MASTER_PORT; collie's own store takes the
      // next free port, which the other ranks find by probing.
      plan.kind = RendezvousPlan::Kind::TorchrunAgent;
      plan.ports.clear();
      for (int p = plan_port_after(port); static_cast<int>(plan.ports.size()) < 8 && p <= 65535;
           ++p) {
        plan.ports.push_back(static_cast<uint16_t>(p));
      }
      plan.serve = nonempty(env, "RANK") == "0";
      plan.id =
          fmt::format("torchrun {}", env.get("TORCHELASTIC_RUN_ID").value_or(addr + ":" + port));
      plan.reason += " (torchrun agent store: collie's store on a port after MASTER_PORT)";
      if (plan.ports.empty()) {
        throw InvalidArgument(fmt::format(
            "MASTER_PORT {} leaves no port after it for collie's store; use a lower port", port));
      }
    }
    return plan;
  }
  const std::string job = env.first_of({"SLURM_JOB_ID", "SLURM_JOBID"}).value_or("");
  const std::string step = env.first_of({"SLURM_STEP_ID", "SLURM_STEPID"}).value_or("");
  if (!step.empty() && !job.empty()) {
    const std::string var =
        env.get("SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST" : "SLURM_NODELIST";
    const std::string list = nonempty(env, var.c_str());
    if (list.empty()) {
      throw InvalidArgument(fmt::format(
          "Slurm step {}.{} without SLURM_STEP_NODELIST; set MASTER_ADDR and MASTER_PORT", job,
          step));
    }
    const auto hosts = expand_hostlist(list);
    const auto job_id =
        env.get_int("SLURM_JOB_ID").value_or(env.get_int("SLURM_JOBID").value_or(0));
    const auto step_id =
        env.get_int(env.get("SLURM_STEP_ID") ? "SLURM_STEP_ID" : "SLURM_STEPID").value_or(0);
    plan.kind = RendezvousPlan::Kind::SlurmStep;
    plan.host = hosts.front();
    plan.ports = slurm_step_ports(job_id, step_id);
    plan.id = fmt::format("slurm step {}.{}", job, step);
    // The step's first task on the first host serves; with Slurm's default block distribution
    // that is task 0. SLURMD_NODENAME is the node name Slurm runs this task on.
    const std::string node = nonempty(env, "SLURMD_NODENAME");
    const std::string local = nonempty(env, "SLURM_LOCALID");
    plan.serve = node.empty() ? nonempty(env, "SLURM_PROCID") == "0"
                              : node == plan.host && (local.empty() || local == "0");
    plan.reason = fmt::format("{} ({}={}): store on {}", plan.id, var, list, plan.host);
    return plan;
  }
  if (env.first_of({"OMPI_COMM_WORLD_SIZE", "PMIX_RANK"})) {
    plan.kind = RendezvousPlan::Kind::Mpi;
    plan.reason = env.get("OMPI_COMM_WORLD_SIZE") ? "Open MPI launcher (OMPI_COMM_WORLD_SIZE)"
                                                  : "PMIx launcher (PMIX_RANK)";
    return plan;
  }
  if (!job.empty()) {
    plan.kind = RendezvousPlan::Kind::SlurmAllocation;
    plan.reason = fmt::format(
        "inside Slurm job {} but not in a job step (an sbatch script or salloc shell): start the "
        "ranks with srun -n N",
        job);
    return plan;
  }
  plan.reason = "no MASTER_ADDR/MASTER_PORT and no srun or mpirun launcher";
  return plan;
}

}  // namespace collie
