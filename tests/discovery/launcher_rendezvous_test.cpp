// Pure parts of launcher detection: Slurm hostlist expansion and the rendezvous plan chosen from
// an environment map (torchrun / collie launch, srun steps, mpirun, sbatch bodies).
#include "discovery/launcher_rendezvous.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/env.h"
#include "core/error.h"
#include "discovery/hostlist.h"
#include "discovery/launch_env.h"

namespace collie {
namespace {

using V = std::vector<std::string>;

TEST(Hostlist, ExpandsRangesListsAndPadding) {
  EXPECT_EQ(expand_hostlist("node1"), V{"node1"});
  EXPECT_EQ(expand_hostlist("node[01-04,7]"), (V{"node01", "node02", "node03", "node04", "node7"}));
  EXPECT_EQ(expand_hostlist("a[1-2]-ib,b3"), (V{"a1-ib", "a2-ib", "b3"}));
  EXPECT_EQ(expand_hostlist("n[08-10]"), (V{"n08", "n09", "n10"}));
  EXPECT_EQ(expand_hostlist("r[1-2]n[1-2]"), (V{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(expand_hostlist("x,y[3],z"), (V{"x", "y3", "z"}));
}

// Compressed as Slurm writes hostlists; expanding the result gives the names back (sorted, once).
TEST(Hostlist, CompressesAsSlurmAndExpandsBack) {
  EXPECT_EQ(compress_hostlist({}), "");
  EXPECT_EQ(compress_hostlist({"node7"}), "node7");
  EXPECT_EQ(compress_hostlist({"node520", "node517", "node518", "node519", "node517"}),
            "node[517-520]");
  EXPECT_EQ(compress_hostlist({"n10", "n08", "n09", "n12"}), "n[08-10,12]");
  EXPECT_EQ(compress_hostlist({"n9", "n10", "gpu-a2", "gpu-a1", "login"}),
            "gpu-a[1-2],login,n[9-10]");
  EXPECT_EQ(compress_hostlist({"a1-ib", "a2-ib"}), "a1-ib,a2-ib");
  EXPECT_EQ(compress_hostlist({"n01", "n1", "n2"}), "n[01,1-2]");
  for (const V& hosts : {V{"node0001", "node0002", "node0010", "node0009", "x", "gpu3"},
                         V{"r1n1", "r1n2", "r2n1"}, V{"n099", "n100", "n101"}}) {
    V want = hosts;
    std::sort(want.begin(), want.end());
    const std::string list = compress_hostlist(hosts);
    V got = expand_hostlist(list);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want) << list;
  }
  EXPECT_EQ(compress_hostlist({"a[1]"}), "a[1]");  // not a host name: listed as it is
}

TEST(Hostlist, MalformedIsInvalidArgumentNamingTheExpression) {
  for (const char* bad :
       {"node[1-", "node]1", "node[a-b]", "node[5-3]", "", "a,,b", "n[[1]]", "n[1-99999999]"}) {
    try {
      expand_hostlist(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos)
          << e.what();
    }
  }
}

using K = RendezvousPlan::Kind;

MapEnv::Map slurm_step(const std::string& node, const std::string& procid,
                       const std::string& localid) {
  return {
      {"SLURM_JOB_ID", "4711"},  {"SLURM_STEP_ID", "3"},   {"SLURM_STEP_NODELIST", "node[02-03]"},
      {"SLURMD_NODENAME", node}, {"SLURM_PROCID", procid}, {"SLURM_LOCALID", localid},
      {"SLURM_NTASKS", "4"}};
}

TEST(RendezvousPlan, MasterAddrAndPortWinOverEverything) {
  auto env = slurm_step("node02", "0", "0");
  env["MASTER_ADDR"] = "10.0.0.9";
  env["MASTER_PORT"] = "29500";
  env["OMPI_COMM_WORLD_SIZE"] = "4";
  const auto p = plan_env_rendezvous(MapEnv(env));
  EXPECT_EQ(p.kind, K::Explicit);
  EXPECT_EQ(p.host, "10.0.0.9");
  EXPECT_EQ(p.ports, std::vector<uint16_t>{29500});
}

TEST(RendezvousPlan, TorchrunAgentStoreMovesCollieToTheNextPorts) {
  const MapEnv env(MapEnv::Map{{"MASTER_ADDR", "node0"},
                               {"MASTER_PORT", "29500"},
                               {"RANK", "0"},
                               {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                               {"TORCHELASTIC_RUN_ID", "abc"}});
  const auto p = plan_env_rendezvous(env);
  EXPECT_EQ(p.kind, K::TorchrunAgent);
  EXPECT_EQ(p.host, "node0");
  ASSERT_EQ(p.ports.size(), 8u);
  EXPECT_EQ(p.ports.front(), 29501);
  EXPECT_TRUE(p.serve);
  EXPECT_EQ(p.id, "torchrun abc");
  EXPECT_THROW(plan_env_rendezvous(MapEnv(MapEnv::Map{{"MASTER_ADDR", "node0"},
                                                      {"MASTER_PORT", "65535"},
                                                      {"TORCHELASTIC_USE_AGENT_STORE", "1"}})),
               InvalidArgument);
}

TEST(RendezvousPlan, OnlyOneOfMasterAddrPortIsAnErrorNamingBoth) {
  for (const char* var : {"MASTER_ADDR", "MASTER_PORT"}) {
    try {
      plan_env_rendezvous(MapEnv(MapEnv::Map{{var, "29500"}}));
      ADD_FAILURE() << var;
    } catch (const InvalidArgument& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("MASTER_ADDR"), std::string::npos) << m;
      EXPECT_NE(m.find("MASTER_PORT"), std::string::npos) << m;
    }
  }
  EXPECT_THROW(plan_env_rendezvous(MapEnv(MapEnv::Map{{"MASTER_ADDR", "h"}, {"MASTER_PORT", "0"}})),
               InvalidArgument);
}

TEST(RendezvousPlan, SlurmStepUsesFirstHostAndOneServingTask) {
  const auto p0 = plan_env_rendezvous(MapEnv(slurm_step("node02", "0", "0")));
  EXPECT_EQ(p0.kind, K::SlurmStep);
  EXPECT_EQ(p0.host, "node02");
  EXPECT_EQ(p0.id, "slurm step 4711.3");
  EXPECT_TRUE(p0.serve);
  EXPECT_EQ(p0.ports, slurm_step_ports(4711, 3));
  EXPECT_NE(p0.reason.find("node[02-03]"), std::string::npos) << p0.reason;
  EXPECT_FALSE(plan_env_rendezvous(MapEnv(slurm_step("node02", "1", "1"))).serve);
  EXPECT_FALSE(plan_env_rendezvous(MapEnv(slurm_step("node03", "2", "0"))).serve);
  // Without SLURMD_NODENAME, task 0 serves.
  auto env = slurm_step("", "0", "0");
  env.erase("SLURMD_NODENAME");
  EXPECT_TRUE(plan_env_rendezvous(MapEnv(env)).serve);
}

TEST(RendezvousPlan, SlurmStepPortsAreDistinctInRangeAndDifferPerStep) {
  const auto a = slurm_step_ports(4711, 3);
  ASSERT_EQ(a.size(), 8u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_GE(a[i], 20000);
    EXPECT_LT(a[i], 60000);
    for (size_t j = 0; j < i; ++j) EXPECT_NE(a[i], a[j]);
  }
  EXPECT_NE(slurm_step_ports(4711, 4).front(), a.front());
  EXPECT_NE(slurm_step_ports(4712, 3).front(), a.front());
  EXPECT_EQ(slurm_step_ports(4711, 3), a);
}

TEST(RendezvousPlan, MpiLauncherAndSlurmAllocationAndNothing) {
  EXPECT_EQ(plan_env_rendezvous(
                MapEnv(MapEnv::Map{{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "1"}}))
                .kind,
            K::Mpi);
  // An sbatch body: allocation variables, no step.
  const MapEnv sbatch(MapEnv::Map{{"SLURM_JOB_ID", "12"},
                                  {"SLURM_PROCID", "0"},
                                  {"SLURM_NTASKS", "4"},
                                  {"SLURM_NODELIST", "node[1-2]"}});
  const auto p = plan_env_rendezvous(sbatch);
  EXPECT_EQ(p.kind, K::SlurmAllocation);
  EXPECT_NE(p.reason.find("srun"), std::string::npos) << p.reason;
  // ...and it is not a launcher world of 4 ranks.
  EXPECT_EQ(detect_launch_env(sbatch).source, "");
  EXPECT_EQ(plan_env_rendezvous(MapEnv(MapEnv::Map{})).kind, K::None);
}

TEST(RendezvousPlan, SlurmStepIsALauncherWorld) {
  const auto le = detect_launch_env(MapEnv(slurm_step("node03", "3", "1")));
  EXPECT_EQ(le.source, "slurm");
  EXPECT_EQ(le.rank, 3);
  EXPECT_EQ(le.world_size, 4);
}

}  // namespace
}  // namespace collie
