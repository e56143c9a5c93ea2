#include "core/env.h"

#include <gtest/gtest.h>

#include "core/env_snapshot.h"
#include "core/error.h"
#include "core/log.h"
#include "discovery/launch_env.h"

namespace collie {

TEST(Env, ParseDuration) {
  EXPECT_EQ(parse_duration("30").count(), 30000);
  EXPECT_EQ(parse_duration("250ms").count(), 250);
  EXPECT_EQ(parse_duration("2m").count(), 120000);
  EXPECT_EQ(parse_duration("1.5s").count(), 1500);
  EXPECT_THROW(parse_duration("abc"), InvalidArgument);
  EXPECT_THROW(parse_duration("5 parsecs"), InvalidArgument);
  // Numbers that are not durations (from_chars reads them) and one past any deadline.
  EXPECT_THROW(parse_duration("nan"), InvalidArgument);
  EXPECT_THROW(parse_duration("inf"), InvalidArgument);
  EXPECT_THROW(parse_duration("1e300"), InvalidArgument);
  EXPECT_EQ(parse_duration("0.5").count(), 500);
}

TEST(Env, IntegerParsingNamesTheVariable) {
  MapEnv env(MapEnv::Map{{"RANK", "x1"}});
  try {
    env.get_int("RANK");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("RANK='x1'"), std::string::npos);
  }
}

TEST(Env, RangedIntegersNameTheVariableAndTheRange) {
  MapEnv env(MapEnv::Map{{"N", "4000000000"}, {"M", "7"}});
  EXPECT_EQ(env.get_int_in("M", 0, 10), 7);
  EXPECT_FALSE(env.get_int_in("UNSET", 0, 10).has_value());
  try {
    env.get_int_in("N", 0, 1000000, " (entries)");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()), "N=4000000000 is not in 0..1000000 (entries)");
  }
}

TEST(Env, OneRuleSaysWhichVariablesHoldCredentials) {
  for (const char* n : {"COLLIE_STORE_SECRET", "COLLIE_DEBUG_TOKEN", "DB_PASSWORD", "IB_PASSWD",
                        "aws_credentials", "my_token", "WANDB_API_KEY"}) {
    EXPECT_TRUE(is_secret_env_name(n)) << n;
  }
  for (const char* n : {"NCCL_IB_PKEY", "COLLIE_DEBUG_PORT", "MASTER_ADDR", "RANK"}) {
    EXPECT_FALSE(is_secret_env_name(n)) << n;
  }
}

// The one snapshot every copy of the environment uses: the run's variables in their order,
// credentials kept by name with their value redacted, everything else left out.
TEST(Env, TheRunSnapshotKeepsTheRunsVariablesAndRedactsCredentials) {
  const std::vector<EnvEntry> got =
      run_env({"HOME=/root", "NCCL_IB_HCA=mlx5_0", "COLLIE_STORE_SECRET=hunter2", "RANK=3",
               "MASTER_ADDR=10.0.0.1", "no_equals_sign", "NCCL_IB_PASSWD=hunter3",
               "LOCAL_WORLD_SIZE=8", "SLURM_PROCID=3", "CUDA_VISIBLE_DEVICES=0,1", "PATH=/bin",
               "TORCHELASTIC_RUN_ID=x", "COLLIE_X=a=b"});
  std::vector<std::string> flat;
  for (const auto& e : got) flat.push_back(e.name + "=" + e.value);
  EXPECT_EQ(flat, (std::vector<std::string>{"NCCL_IB_HCA=mlx5_0", "COLLIE_STORE_SECRET=<redacted>",
                                            "RANK=3", "MASTER_ADDR=10.0.0.1",
                                            "NCCL_IB_PASSWD=<redacted>", "LOCAL_WORLD_SIZE=8",
                                            "SLURM_PROCID=3", "CUDA_VISIBLE_DEVICES=0,1",
                                            "TORCHELASTIC_RUN_ID=x", "COLLIE_X=a=b"}));
  EXPECT_FALSE(is_run_env_name("HOME"));
  EXPECT_FALSE(is_run_env_name("LD_PRELOAD"));
}

TEST(Logging, TorchEffectiveLevelMatrix) {
  EXPECT_EQ(effective_log_level(LogLevel::Error, DebugLevel::Detail), LogLevel::Error);
  EXPECT_EQ(effective_log_level(LogLevel::Warning, DebugLevel::Info), LogLevel::Warning);
  EXPECT_EQ(effective_log_level(LogLevel::Info, DebugLevel::Off), LogLevel::Info);
  EXPECT_EQ(effective_log_level(LogLevel::Info, DebugLevel::Info), LogLevel::Debug);
  EXPECT_EQ(effective_log_level(LogLevel::Info, DebugLevel::Detail), LogLevel::Trace);
  EXPECT_THROW(parse_debug_level("LOUD"), InvalidArgument);
  EXPECT_EQ(parse_debug_level("detail"), DebugLevel::Detail);
}

TEST(LaunchEnv, SourcesAndContradictions) {
  EXPECT_EQ(detect_launch_env(MapEnv(MapEnv::Map{})).source, "");
  auto t = detect_launch_env(
      MapEnv(MapEnv::Map{{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}}));
  EXPECT_EQ(t.source, "env");
  EXPECT_EQ(*t.rank, 2);
  auto o = detect_launch_env(
      MapEnv(MapEnv::Map{{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "3"}}));
  EXPECT_EQ(o.source, "openmpi");
  EXPECT_EQ(*o.world_size, 3);
  auto p = detect_launch_env(MapEnv(MapEnv::Map{{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}}));
  EXPECT_EQ(p.source, "pmi");
  auto s = detect_launch_env(MapEnv(MapEnv::Map{{"SLURM_PROCID", "5"},
                                                {"SLURM_NTASKS", "8"},
                                                {"SLURM_NTASKS_PER_NODE", "4(x2)"},
                                                {"SLURM_STEP_ID", "0"}}));
  EXPECT_EQ(s.source, "slurm");
  EXPECT_FALSE(s.local_world_size.has_value());
  // An sbatch body or salloc shell has SLURM_PROCID but no job step: not a rank of anything.
  auto body = detect_launch_env(
      MapEnv(MapEnv::Map{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}, {"SLURM_JOB_ID", "42"}}));
  EXPECT_EQ(body.source, "");
  EXPECT_THROW(detect_launch_env(MapEnv(MapEnv::Map{{"RANK", "1"},
                                                    {"WORLD_SIZE", "4"},
                                                    {"OMPI_COMM_WORLD_RANK", "2"},
                                                    {"OMPI_COMM_WORLD_SIZE", "4"}})),
               InvalidArgument);
  EXPECT_THROW(detect_launch_env(MapEnv(MapEnv::Map{{"RANK", "4"}, {"WORLD_SIZE", "4"}})),
               InvalidArgument);
}

}  // namespace collie
