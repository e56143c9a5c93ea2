// rendezvous() and store_barrier() with ranks as threads, each with its own MapEnv, over the
// real stores (TcpStore on loopback, FileStore in the temp directory).
#include "comm/rendezvous.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <sstream>
#include <thread>

#include "core/env.h"
#include "core/error.h"
#include "discovery/launcher_rendezvous.h"
#include "launch/launch.h"
#include "store/socket_util.h"
#include "store/store.h"

namespace collie {
namespace {

using namespace std::chrono_literals;

uint16_t free_port() {
  uint16_t port = 0;
  close(net::listen_on("127.0.0.1", 0, &port));
  return port;
}

std::string temp_path(const std::string& tag) {
  return (std::filesystem::temp_directory_path() /
          ("collie_rdzv_" + tag + "_" + std::to_string(getpid())))
      .string();
}

// Runs fn(rank), one rendezvous, on `threads` threads; returns each rank's outcome: "" or the
// exception's type-tagged message. Rendezvous results stay alive until every rank is done,
// because rank 0 hosts the TcpStore server. Not testing::run_ranks: there is no process group
// yet, the rendezvous that would make one is what is under test.
struct Outcome {
  std::string error;  // "" = success
  std::string kind;   // "InvalidArgument", "TimeoutError", ...
  Rendezvous rdzv;
};

std::vector<Outcome> rendezvous_on_threads(int threads, const std::function<Rendezvous(int)>& fn) {
  std::vector<Outcome> out(threads);
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i) {
    ts.emplace_back([&, i] {
      try {
        out[i].rdzv = fn(i);
      } catch (const InvalidArgument& e) {
        out[i] = {e.what(), "InvalidArgument", {}};
      } catch (const TimeoutError& e) {
        out[i] = {e.what(), "TimeoutError", {}};
      } catch (const std::exception& e) {
        out[i] = {e.what(), "other", {}};
      }
    });
  }
  for (auto& t : ts) t.join();
  return out;
}

void expect_connected(std::vector<Outcome>& out, int world, const std::string& method) {
  for (int r = 0; r < world; ++r) {
    ASSERT_EQ(out[r].error, "") << "rank " << r;
    EXPECT_EQ(out[r].rdzv.rank, r);
    EXPECT_EQ(out[r].rdzv.world_size, world);
    EXPECT_EQ(out[r].rdzv.method, method);
  }
  // The ranks share one store: each writes, everyone reads everyone.
  for (int r = 0; r < world; ++r) out[r].rdzv.store->set("hi/" + std::to_string(r), "x");
  for (int r = 0; r < world; ++r) {
    for (int p = 0; p < world; ++p)
      EXPECT_EQ(out[r].rdzv.store->get_string("hi/" + std::to_string(p)), "x");
  }
}

TEST(Rendezvous, EnvMethodWithRanksAsThreads) {
  constexpr int kWorld = 4;
  const std::string port = std::to_string(free_port());
  auto out = rendezvous_on_threads(kWorld, [&](int r) {
    MapEnv env({{"MASTER_ADDR", "127.0.0.1"},
                {"MASTER_PORT", port},
                {"RANK", std::to_string(r)},
                {"WORLD_SIZE", std::to_string(kWorld)}});
    return rendezvous(RendezvousRequest{"", -1, -1, 10s}, env);
  });
  expect_connected(out, kWorld, "env");
}

TEST(Rendezvous, TcpMethod) {
  constexpr int kWorld = 3;
  const std::string method = "tcp://127.0.0.1:" + std::to_string(free_port());
  auto out = rendezvous_on_threads(kWorld, [&](int r) {
    MapEnv env({});
    return rendezvous(RendezvousRequest{method, r, kWorld, 10s}, env);
  });
  expect_connected(out, kWorld, "tcp");
}

// Issue 27: env:// (torchrun, srun, by hand) ran the store with no secret and said nothing. Now
// the job uses the COLLIE_STORE_SECRET its environment gives every rank, and without one the
// rank serving the store says so in one line naming the variable (the others stay quiet).
TEST(Rendezvous, AStoreWithoutASecretIsSaidOnceAndOneFromTheEnvironmentIsUsed) {
  constexpr int kWorld = 3;
  auto run = [&](const std::string& secret, std::vector<Outcome>* out) {
    const std::string port = std::to_string(free_port());
    ::testing::internal::CaptureStderr();
    *out = rendezvous_on_threads(kWorld, [&](int r) {
      MapEnv::Map vars = {{"MASTER_ADDR", "127.0.0.1"},
                          {"MASTER_PORT", port},
                          {"RANK", std::to_string(r)},
                          {"WORLD_SIZE", std::to_string(kWorld)}};
      if (!secret.empty()) vars["COLLIE_STORE_SECRET"] = secret;
      return rendezvous(RendezvousRequest{"", -1, -1, 10s}, MapEnv(vars));
    });
    return ::testing::internal::GetCapturedStderr();
  };
  std::vector<Outcome> open;
  const std::string said = run("", &open);
  expect_connected(open, kWorld, "env");
  EXPECT_FALSE(open[0].rdzv.store->members_only());
  size_t lines = 0;
  for (size_t at = said.find("has no secret"); at != std::string::npos;
       at = said.find("has no secret", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << said;
  EXPECT_NE(said.find("COLLIE_STORE_SECRET"), std::string::npos) << said;

  std::vector<Outcome> locked;
  const std::string quiet = run("job-secret", &locked);
  expect_connected(locked, kWorld, "env");
  EXPECT_EQ(quiet.find("has no secret"), std::string::npos) << quiet;
  for (int r = 0; r < kWorld; ++r) EXPECT_TRUE(locked[r].rdzv.store->members_only()) << r;
}

TEST(Rendezvous, FileMethodRemovesTheFileAfterwards) {
  constexpr int kWorld = 3;
  const std::string path = temp_path("file");
  std::filesystem::remove(path);
  {
    auto out = rendezvous_on_threads(kWorld, [&](int r) {
      MapEnv env({{"COLLIE_INIT_METHOD", "file://" + path}});
      return rendezvous(RendezvousRequest{"", r, kWorld, 10s}, env);
    });
    expect_connected(out, kWorld, "file");
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(Rendezvous, DuplicateRankIsInvalidArgument) {
  const std::string method = "tcp://127.0.0.1:" + std::to_string(free_port());
  // Threads 1 and 2 both claim rank 1 of 2.
  auto out = rendezvous_on_threads(3, [&](int t) {
    MapEnv env({});
    return rendezvous(RendezvousRequest{method, t == 0 ? 0 : 1, 2, 3s}, env);
  });
  EXPECT_EQ(out[0].error, "");
  int dup = 0;
  for (int t = 1; t < 3; ++t) {
    if (out[t].kind == "InvalidArgument") {
      ++dup;
      EXPECT_NE(out[t].error.find("claim rank 1"), std::string::npos) << out[t].error;
    } else {
      EXPECT_EQ(out[t].error, "");
    }
  }
  EXPECT_EQ(dup, 1);
}

TEST(Rendezvous, ContradictingWorldSizeIsInvalidArgument) {
  const std::string path = temp_path("ws");
  std::filesystem::remove(path);
  auto out = rendezvous_on_threads(2, [&](int r) {
    MapEnv env({});
    return rendezvous(RendezvousRequest{"file://" + path, r, r == 0 ? 2 : 3, 1s}, env);
  });
  int invalid = 0;
  for (auto& o : out) {
    if (o.kind == "InvalidArgument") {
      ++invalid;
      EXPECT_NE(o.error.find("world size"), std::string::npos) << o.error;
    } else {
      // The rank that won the world-size race waits for a peer that never checks in.
      EXPECT_EQ(o.kind, "TimeoutError") << o.error;
    }
  }
  EXPECT_EQ(invalid, 1);
  std::filesystem::remove(path);
}

TEST(Rendezvous, MissingRankIsNamedWithinTheTimeout) {
  const std::string method = "tcp://127.0.0.1:" + std::to_string(free_port());
  const auto start = std::chrono::steady_clock::now();
  // World of 4: rank 3 never starts. Rank 0 hosts the store and waits longer, so that the
  // others can still list the missing ranks when their own timeout expires (if rank 0 exits
  // first, they get NetworkError instead: the store died).
  auto out = rendezvous_on_threads(3, [&](int r) {
    MapEnv env({});
    return rendezvous(RendezvousRequest{method, r, 4, r == 0 ? 1200ms : 700ms}, env);
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(out[r].kind, "TimeoutError") << out[r].error;
    EXPECT_NE(out[r].error.find("rank 3 of 4 did not arrive"), std::string::npos) << out[r].error;
    EXPECT_NE(out[r].error.find("[Rank " + std::to_string(r) + "]"), std::string::npos);
  }
}

// The rank that serves the store needs a descriptor per rank: when the open-files limit (after
// collie raised it to the hard limit) cannot hold them, it says so in one line before it
// listens, naming the limit and what the job needs. In a child, whose hard limit it lowers.
TEST(Rendezvous, AStoreHostWhoseOpenFilesLimitCannotHoldTheJobSaysSo) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    rlimit lim{128, 256};
    std::string out = "no error";
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0) out = "setrlimit failed";
    try {
      MapEnv env({});
      rendezvous(RendezvousRequest{"tcp://127.0.0.1:" + std::to_string(free_port()), 0, 1000, 2s},
                 env);
    } catch (const InvalidArgument& e) {
      out = e.what();
    } catch (const std::exception& e) {
      out = std::string("wrong error: ") + e.what();
    }
    if (write(fds[1], out.data(), out.size()) < 0) _exit(2);
    _exit(0);
  }
  close(fds[1]);
  std::string got;
  char buf[1024];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;)
    got.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  waitpid(child, nullptr, 0);
  EXPECT_NE(got.find("the store this process serves for 1000 ranks needs about"), std::string::npos)
      << got;
  EXPECT_NE(got.find("this process may open 256 (hard limit 256)"), std::string::npos)
      << got;  // raised to the hard limit first
  EXPECT_EQ(got.find('\n'), std::string::npos) << got;
}

TEST(Rendezvous, BadInitMethodsAreOneLineInvalidArguments) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"foo://bar", "unknown init method"},
      {"tcp://nohostport", "tcp://HOST:PORT"},
      {"tcp://127.0.0.1:99999", "not a TCP port"},
      {"tcp://127.0.0.1:http", "not a TCP port"},
      {"file://relative/path", "file:///ABSOLUTE/PATH"},
      {"env://", "MASTER_ADDR"},
  };
  MapEnv env({});
  for (const auto& [method, expect] : cases) {
    try {
      rendezvous(RendezvousRequest{method, 0, 1, 1s}, env);
      ADD_FAILURE() << method << " was accepted";
    } catch (const InvalidArgument& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(expect), std::string::npos) << method << ": " << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
  EXPECT_THROW(rendezvous(RendezvousRequest{"env://", 2, 2, 1s}, env), InvalidArgument);
  EXPECT_THROW(rendezvous(RendezvousRequest{"env://", -1, -1, 1s}, env), InvalidArgument);
}

// Real processes started by the launcher meet over env:// (TcpStore hosted by rank 0).
TEST(Rendezvous, EnvMethodAcrossLaunchedProcesses) {
  char tmpl[] = "/tmp/collie_rdzv_out_XXXXXX";
  const int fd = mkstemp(tmpl);
  launch::LaunchSpec spec;
  spec.nprocs = 4;
  spec.argv = {RENDEZVOUS_PROBE_PATH};
  spec.out_fd = fd;
  spec.timeout = 30s;
  const launch::LaunchResult r = launch::run(spec);
  EXPECT_EQ(r.exit_code, 0);
  std::ifstream in(tmpl);
  std::stringstream ss;
  ss << in.rdbuf();
  for (int rank = 0; rank < 4; ++rank) {
    const std::string want = "[" + std::to_string(rank) + "] rank " + std::to_string(rank) +
                             " of 4 via env sees rank " + std::to_string((rank + 1) % 4);
    EXPECT_NE(ss.str().find(want), std::string::npos) << ss.str();
  }
  // A rank that dies before joining fails the job quickly with its status.
  spec.argv = {RENDEZVOUS_PROBE_PATH, "2"};
  spec.kill_grace = 500ms;
  const auto start = std::chrono::steady_clock::now();
  const launch::LaunchResult f = launch::run(spec);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_EQ(f.exit_code, 3);
  EXPECT_EQ(f.failed_rank, 2);
  close(fd);
  unlink(tmpl);
}

TEST(StoreBarrier, ReleasesEveryRankAndNamesLateOnes) {
  const std::string method = "tcp://127.0.0.1:" + std::to_string(free_port());
  auto out = rendezvous_on_threads(4, [&](int r) {
    MapEnv env({});
    Rendezvous rd = rendezvous(RendezvousRequest{method, r, 4, 10s}, env);
    for (int i = 0; i < 5; ++i) store_barrier(*rd.store, "b" + std::to_string(i), r, 4, 10s);
    // Ranks 1 and 2 skip this one.
    if (r == 0 || r == 3) {
      try {
        store_barrier(*rd.store, "partial", r, 4, 300ms);
        throw std::runtime_error("partial barrier passed");
      } catch (const TimeoutError& e) {
        if (std::string(e.what()).find("ranks 1, 2 of 4") == std::string::npos) throw;
      }
    }
    store_barrier(*rd.store, "end", r, 4, 10s);
    return rd;
  });
  for (auto& o : out) EXPECT_EQ(o.error, "");
  EXPECT_EQ(format_ranks({5, 1, 2, 3, 9, 10}), "1-3, 5, 9, 10");
}

}  // namespace
}  // namespace collie

namespace collie {
namespace {

MapEnv slurm_task_env(long long job, int procid, int world) {
  return MapEnv(MapEnv::Map{{"SLURM_JOB_ID", std::to_string(job)},
                            {"SLURM_STEP_ID", "0"},
                            {"SLURM_STEP_NODELIST", "127.0.0.1"},
                            {"SLURMD_NODENAME", "127.0.0.1"},
                            {"SLURM_PROCID", std::to_string(procid)},
                            {"SLURM_LOCALID", std::to_string(procid)},
                            {"SLURM_NTASKS", std::to_string(world)}});
}

// A Slurm step with no MASTER_*: the ranks meet on a port derived from the job and step ids.
// The first candidate port is held by a foreign listener that never answers; the serving task
// moves to the next candidate and the others find it there.
TEST(Rendezvous, SlurmStepMeetsOnDerivedPortSkippingATakenOne) {
  const long long job = 700000 + getpid() % 100000;
  const auto ports = slurm_step_ports(job, 0);
  uint16_t bound = 0;
  int foreign = -1;
  try {
    foreign = net::listen_on("127.0.0.1", ports[0], &bound);
  } catch (const NetworkError&) {
    // already taken by something else: the test still covers the fallback
  }
  auto out = rendezvous_on_threads(3, [&](int r) {
    return rendezvous(RendezvousRequest{"", -1, -1, 20s}, slurm_task_env(job, r, 3));
  });
  if (foreign >= 0) close(foreign);
  expect_connected(out, 3, "env");
  for (int r = 0; r < 3; ++r) EXPECT_EQ(out[r].rdzv.store_host, "127.0.0.1");
}

// Under torchrun's agent store MASTER_PORT is torch's; collie's ranks meet on a port after it.
TEST(Rendezvous, TorchrunAgentStoreLeavesMasterPortAlone) {
  uint16_t agent_port = 0;
  const int agent = net::listen_on("127.0.0.1", 0, &agent_port);  // stands in for torch's store
  if (agent_port >= 65535 - 8) {
    close(agent);
    GTEST_SKIP() << "ephemeral port " << agent_port << " leaves no room after it";
  }
  auto out = rendezvous_on_threads(3, [&](int r) {
    return rendezvous(RendezvousRequest{"", -1, -1, 20s},
                      MapEnv(MapEnv::Map{{"MASTER_ADDR", "127.0.0.1"},
                                         {"MASTER_PORT", std::to_string(agent_port)},
                                         {"RANK", std::to_string(r)},
                                         {"WORLD_SIZE", "3"},
                                         {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                         {"TORCHELASTIC_RUN_ID", std::to_string(getpid())}}));
  });
  close(agent);
  expect_connected(out, 3, "env");
}

TEST(Rendezvous, SbatchBodyIsOneLineSayingToUseSrun) {
  const MapEnv env(
      MapEnv::Map{{"SLURM_JOB_ID", "12"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}});
  try {
    rendezvous(RendezvousRequest{"", -1, -1, 1s}, env);
    FAIL() << "accepted";
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("not in a job step"), std::string::npos) << m;
    EXPECT_NE(m.find("srun"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace collie
