// PyTorch-format flight-recorder dumps from a real hung job (issue 15): 3 processes over loopback
// on Gloo run all_reduce, broadcast, all_gather, a send/recv ring and a barrier, then rank 1
// sleeps past the timeout in front of all_reduce #5. With COLLIE_FR_DUMP_FORMAT=json,torch every
// rank writes both dumps of one snapshot. Then:
//  - torch_dump_check.py loads the torch files as torch's fr_trace loader does (prefix inferred
//    from the names, pickle.load, version, ranks string, profiling_name, the keys builder.py
//    reads) and matches every number against collie's JSON dump of the same rank;
//  - `collie analyze` gives the same verdict on the torch files alone as on the JSON files alone.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "comm/registry.h"
#include "comm/rendezvous.h"
#include "debug/dump_service.h"
#include "support/multiprocess.h"

namespace collie {
namespace {

namespace fs = std::filesystem;
using testing::RankContext;

constexpr Millis kTimeout{2000};
constexpr int kWorld = 3;

std::pair<int, std::string> run_command(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

void body(RankContext& ctx) {
  std::vector<float> a(64, 1.0f), in(64), all(64 * kWorld);
  auto v = [](std::vector<float>& x) {
    return TensorView::cpu(x.data(), x.size(), DType::Float32);
  };
  std::string error;
  try {
    ctx.pg->all_reduce(v(a))->wait();
    ctx.pg->broadcast(v(a))->wait();
    ctx.pg->all_gather(v(a), v(all))->wait();
    const int next = (ctx.rank + 1) % kWorld, prev = (ctx.rank + kWorld - 1) % kWorld;
    auto s = ctx.pg->send(v(a), next);
    ctx.pg->recv(v(in), prev)->wait();
    s->wait();
    ctx.pg->barrier()->wait();
    if (ctx.rank == 1) std::this_thread::sleep_for(kTimeout + Millis(2500));
    ctx.pg->all_reduce(v(a))->wait();
  } catch (const std::exception& e) {
    error = e.what();
  }
  // Stay until this rank has dumped and the others are done (rank 0 serves the store).
  auto& ds = DumpService::global();
  for (int i = 0; i < 600 && ds.dumps_written() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ds.flush(std::chrono::seconds(2));
  store_barrier(*ctx.pg->info().store, "torch_dump_exit", ctx.rank, kWorld, Millis(20000));
  if (!error.empty()) throw std::runtime_error(error);
}

nlohmann::json analyze_json(const fs::path& dir) {
  auto [code, out] =
      run_command(fmt::format("{} analyze {} --json 2>/dev/null", COLLIE_BIN, dir.string()));
  EXPECT_EQ(code, 1) << dir << ": " << out;
  nlohmann::json j;
  EXPECT_NO_THROW(j = nlohmann::json::parse(out)) << out;
  return j;
}

// What a verdict is made of: culprits, finding kinds and groups, each rank's state.
nlohmann::json verdict(const nlohmann::json& a) {
  std::set<std::string> kinds;
  for (const auto& f : a["findings"]) {
    kinds.insert(f["kind"].get<std::string>() + " pg " + f["pg_id"].get<std::string>());
  }
  nlohmann::json states;
  for (const auto& s : a["states"]) states[s["ranks"].get<std::string>()] = s["state"];
  return {{"culprits", a["culprits"]}, {"kinds", kinds}, {"states", states}};
}

TEST(TorchDumpE2E, HungJobDumpsLoadAsTorchAndAnalyzeAlike) {
  ASSERT_NE(find_backend("gloo"), nullptr)
      << "gloo is a required backend (cmake/Dependencies.cmake) but is not registered";
  const fs::path dir = fs::temp_directory_path() / fmt::format("collie_torch_e2e_{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  testing::RunOptions o;
  o.backend = "gloo";
  o.mode = testing::Mode::Processes;
  o.group_timeout = kTimeout;
  o.deadline = Millis(40000);
  o.env = {{"COLLIE_FR_DUMP_DIR", dir.string()},
           {"COLLIE_FR_DUMP_FORMAT", "json,torch"},
           {"COLLIE_DEBUG", "OFF"}};
  const auto r = testing::run_ranks(kWorld, body, o);
  SCOPED_TRACE(r.summary());
  for (int rank = 0; rank < kWorld; ++rank) {
    ASSERT_TRUE(fs::exists(dir / fmt::format("collie_fr_rank_{}.json", rank))) << rank;
    ASSERT_TRUE(fs::exists(dir / fmt::format("nccl_trace_rank_{}", rank))) << rank;
  }
  // torch's loader on the directory as the job left it (collie's JSON files beside).
  auto [code, out] = run_command(fmt::format("python3 {} {} 2>&1", TORCH_DUMP_CHECK, dir.string()));
  EXPECT_EQ(code, 0) << out;
  std::printf("%s", out.c_str());

  const fs::path json_dir = dir / "json", torch_dir = dir / "torch";
  fs::create_directories(json_dir);
  fs::create_directories(torch_dir);
  for (int rank = 0; rank < kWorld; ++rank) {
    const std::string j = fmt::format("collie_fr_rank_{}.json", rank);
    const std::string t = fmt::format("nccl_trace_rank_{}", rank);
    fs::copy_file(dir / j, json_dir / j);
    fs::copy_file(dir / t, torch_dir / t);
  }
  const nlohmann::json from_json = analyze_json(json_dir);
  const nlohmann::json from_torch = analyze_json(torch_dir);
  EXPECT_EQ(from_json["culprits"], "1") << from_json.dump(1);
  EXPECT_EQ(verdict(from_torch), verdict(from_json))
      << "torch: " << from_torch.dump(1) << "\njson: " << from_json.dump(1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace collie
