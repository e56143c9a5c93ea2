// `collie replay` on the dumps of a real job: 4 processes over loopback on Gloo run collectives
// of every kind (roots, reduce ops, uneven all_to_all with zeros), a send/recv ring, send/recv
// inside subgroups, and collectives on two kinds of subgroups ('tp' pairs {0,1} {2,3}, 'odd'
// {1,3}); each rank writes down what it called, then dumps its flight recorder (collie's JSON and
// PyTorch's pickle). Then:
//  - the replay of the JSON dumps plans, for every rank, exactly the calls it made, in order,
//    with their element counts, and its own flight recorder (COLLIE_FR_DUMP_DIR) shows every
//    rank ran them, in order, once per pass;
//  - the PyTorch dumps of the same job replay the same calls, saying what torch does not record
//    (roots, reduce ops);
//  - --ranks 2,3 on 2 ranks replays the one group inside them and says why the others are not;
//  - unusable dumps and flags are one line and exit 2.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "comm/registry.h"
#include "comm/rendezvous.h"
#include "debug/dump_service.h"
#include "stack/init.h"
#include "support/multiprocess.h"

namespace collie {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::RankContext;

constexpr int kWorld = 4;

struct CliRun {
  int code = -1;
  std::string out, err;
};

CliRun collie(const std::string& args, const std::string& env = "") {
  const std::string out = fmt::format("/tmp/collie_replay_{}_out", ::getpid());
  const std::string err = fmt::format("/tmp/collie_replay_{}_err", ::getpid());
  const int st =
      std::system(fmt::format("{} {} {} >{} 2>{}", env, COLLIE_BIN, args, out, err).c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  CliRun r{WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(out), slurp(err)};
  fs::remove(out);
  fs::remove(err);
  return r;
}

// What one rank called: "<group desc> <op> <input elements> <output elements>", in order.
using Calls = std::vector<std::string>;

std::string call(const std::string& group, const std::string& op, size_t in, size_t out) {
  return fmt::format("{} {} {} {}", group, op, in, out);
}

// The job. Every rank makes the same new_group calls; only members use a group.
void job(RankContext& ctx, const fs::path& dir) {
  ProcessGroup& w = *ctx.pg;
  const int r = ctx.rank, n = kWorld;
  NewGroupOptions tp_opts, odd_opts;
  tp_opts.desc = "tp";
  odd_opts.desc = "odd";
  auto a = new_group(w, {0, 1}, tp_opts);
  auto b = new_group(w, {2, 3}, tp_opts);
  auto odd = new_group(w, {1, 3}, odd_opts);
  ProcessGroup& tp = r < 2 ? *a : *b;
  Calls calls;
  std::vector<char> mem(1 << 16);
  auto v = [&](size_t count, DType d, size_t at = 0) {
    return TensorView::cpu(mem.data() + at, count, d);
  };
  const std::string W = "default_pg";

  TensorView m = v(16, DType::Float32);
  m.shape.ndim = 2;  // a 4 x 4 tensor: the dump records [[4, 4]]
  m.shape.dims[0] = m.shape.dims[1] = 4;
  w.all_reduce(m)->wait();
  calls.push_back(call(W, "all_reduce", 16, 0));
  w.all_gather(v(8, DType::Int32), v(32, DType::Int32, 4096))->wait();
  calls.push_back(call(W, "all_gather", 8, 32));
  BroadcastOptions bo;
  bo.root = 2;
  w.broadcast(v(5, DType::Float64), bo)->wait();
  calls.push_back(call(W, "broadcast", 5, 0));
  ReduceOptions ro;
  ro.root = 1;
  ro.op = ReduceOp::Max;
  w.reduce(v(6, DType::BFloat16), ro)->wait();
  calls.push_back(call(W, "reduce", 6, 0));
  tp.all_reduce(v(32, DType::Float32))->wait();
  calls.push_back(call("tp", "all_reduce", 32, 0));
  w.reduce_scatter(v(16, DType::Float32), v(4, DType::Float32, 4096))->wait();
  calls.push_back(call(W, "reduce_scatter", 16, 4));
  // Uneven all_to_all with zeros: rank i sends (i + j) % 3 elements to rank j.
  std::vector<int64_t> in_splits(n), out_splits(n);
  int64_t ins = 0, outs = 0;
  for (int j = 0; j < n; ++j) {
    in_splits[j] = (r + j) % 3;
    out_splits[j] = (j + r) % 3;
    ins += in_splits[j];
    outs += out_splits[j];
  }
  AllToAllOptions ao;
  ao.input_splits = in_splits;
  ao.output_splits = out_splits;
  w.all_to_all(v(ins, DType::Float32), v(outs, DType::Float32, 4096), ao)->wait();
  calls.push_back(call(W, "all_to_all", ins, outs));
  GatherOptions go;
  go.root = 3;
  w.gather(v(3, DType::Float32), r == 3 ? v(12, DType::Float32, 4096) : TensorView{}, go)->wait();
  calls.push_back(call(W, "gather", 3, r == 3 ? 12 : 0));
  ScatterOptions so;
  so.root = 0;
  w.scatter(r == 0 ? v(8, DType::Float32) : TensorView{}, v(2, DType::Float32, 4096), so)->wait();
  calls.push_back(call(W, "scatter", r == 0 ? 8 : 0, 2));
  // A ring: send to the next rank, receive from the previous one.
  P2POptions po;
  po.async_op = true;
  auto s = w.send(v(10, DType::Float32), (r + 1) % n, po);
  auto rv = w.recv(v(10, DType::Float32, 4096), (r + n - 1) % n, po);
  s->wait();
  rv->wait();
  calls.push_back(call(W, "send", 10, 0));
  calls.push_back(call(W, "recv", 10, 0));
  if (r == 1 || r == 3) {
    odd->all_gather(v(4, DType::Int64), v(8, DType::Int64, 4096))->wait();
    calls.push_back(call("odd", "all_gather", 4, 8));
  }
  w.barrier()->wait();
  calls.push_back(call(W, "barrier", 0, 0));
  BroadcastOptions tb;
  tb.root = 1;
  tp.broadcast(v(7, DType::Float32), tb)->wait();
  calls.push_back(call("tp", "broadcast", 7, 0));
  // Inside each pair: the first sends 12 bytes to the second.
  if (tp.rank() == 0) {
    tp.send(v(12, DType::UInt8), 1)->wait();
    calls.push_back(call("tp", "send", 12, 0));
  } else {
    tp.recv(v(12, DType::UInt8), 0)->wait();
    calls.push_back(call("tp", "recv", 12, 0));
  }
  std::ofstream f(dir / fmt::format("calls_{}.txt", r));
  for (const auto& c : calls) f << c << "\n";
  f.close();
  DumpService::global().dump_now("the job is done");
  store_barrier(*w.info().store, "job_done", r, n, Millis(20000));
}

Calls read_calls(const fs::path& dir, int rank) {
  Calls c;
  std::ifstream in(dir / fmt::format("calls_{}.txt", rank));
  for (std::string line; std::getline(in, line);) c.push_back(line);
  return c;
}

// Each rank's calls as the replay's plan has them (rank order of its dump entries).
std::map<int, Calls> planned(const json& replay) {
  std::map<std::string, std::string> desc;
  for (const auto& g : replay["groups"]) desc[g["pg_id"]] = g["desc"];
  std::map<int, std::map<size_t, std::string>> by_entry;
  for (const auto& c : replay["calls"]) {
    for (const auto& p : c["ranks"]) {
      const int rank = replay["played"][p["rank"].get<size_t>()];
      by_entry[rank][p["entry"]] = call(desc[c["group"]], p["op"], p["in_count"], p["out_count"]);
    }
  }
  std::map<int, Calls> out;
  for (const auto& [rank, entries] : by_entry)
    for (const auto& [e, c] : entries) out[rank].push_back(c);
  return out;
}

// What the replay's own flight recorder shows each rank ran on the replayed groups (every group
// but its world, which only times and exchanges results): "<desc> <op> <input elements>".
std::map<int, Calls> recorded_by_replay(const fs::path& dir) {
  std::map<int, Calls> out;
  for (int rank = 0; rank < kWorld; ++rank) {
    const fs::path p = dir / fmt::format("collie_fr_rank_{}.json", rank);
    if (!fs::exists(p)) continue;
    const json d = json::parse(std::ifstream(p));
    for (const auto& e : d["entries"]) {
      const std::string pg = e["pg_id"];
      if (pg == "0") continue;
      std::string op = e["profiling_name"];
      op = op.substr(op.find(':') + 1);
      op = op.substr(0, op.find(' '));
      size_t numel = 0;
      for (const auto& shape : e["input_sizes"]) {
        size_t k = 1;
        for (const auto& dim : shape) k *= dim.get<size_t>();
        numel += k;
      }
      out[rank].push_back(
          fmt::format("{} {} {}", d["pg_config"][pg]["desc"].get<std::string>(), op, numel));
    }
  }
  return out;
}

class RecordedJob : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_NE(find_backend("gloo"), nullptr) << "gloo is a required backend but is not registered";
    dir_ = fs::temp_directory_path() / fmt::format("collie_replay_job_{}", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "job");
    testing::RunOptions o;
    o.mode = testing::Mode::Processes;
    o.deadline = Millis(60000);
    o.env = {{"COLLIE_FR_DUMP_DIR", (dir_ / "job").string()},
             {"COLLIE_FR_DUMP_FORMAT", "json,torch"}};
    const auto r = testing::run_ranks(
        kWorld, [](RankContext& ctx) { job(ctx, dir_ / "job"); }, o);
    ASSERT_TRUE(r.ok()) << r.summary();
    fs::create_directories(dir_ / "json");
    fs::create_directories(dir_ / "torch");
    for (int rank = 0; rank < kWorld; ++rank) {
      const std::string j = fmt::format("collie_fr_rank_{}.json", rank);
      const std::string t = fmt::format("nccl_trace_rank_{}", rank);
      fs::copy_file(dir_ / "job" / j, dir_ / "json" / j);
      fs::copy_file(dir_ / "job" / t, dir_ / "torch" / t);
    }
  }
  static void TearDownTestSuite() {
    if (!std::getenv("KEEP")) fs::remove_all(dir_);
  }
  static fs::path dir_;
};

fs::path RecordedJob::dir_;

TEST_F(RecordedJob, ReplaysEveryRanksCallsInOrderOncePerPass) {
  const fs::path fr = dir_ / "replay_fr";
  fs::create_directories(fr);
  const std::string out = (dir_ / "replay.json").string();
  const CliRun r =
      collie(fmt::format("replay {} -n 2 -w 1 -T 60 -J {} --per-op", (dir_ / "json").string(), out),
             "COLLIE_FR_DUMP_DIR=" + fr.string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json j = json::parse(std::ifstream(out));
  EXPECT_EQ(j["played"], json({0, 1, 2, 3}));
  const auto plan = planned(j);
  const auto ran = recorded_by_replay(fr);
  for (int rank = 0; rank < kWorld; ++rank) {
    const Calls want = read_calls(dir_ / "job", rank);
    ASSERT_FALSE(want.empty()) << rank;
    EXPECT_EQ(plan.at(rank), want) << "rank " << rank << "'s planned calls";
    // 1 warmup + 2 timed passes of the same calls (input elements only: what the recorder
    // records for every op).
    Calls passes;
    for (int p = 0; p < 3; ++p) {
      for (const std::string& c : want) {
        std::istringstream in(c);
        std::string g, op;
        size_t i = 0, o = 0;
        in >> g >> op >> i >> o;
        passes.push_back(fmt::format("{} {} {}", g, op, i));
      }
    }
    ASSERT_TRUE(ran.count(rank)) << "no flight-recorder dump of replay rank " << rank;
    EXPECT_EQ(ran.at(rank), passes) << "rank " << rank << " as the replay's recorder saw it";
  }
  // Every call has a time; the report has tables, totals and the largest differences.
  for (const auto& c : j["calls"]) EXPECT_GT(c["replayed_us"].get<double>(), 0) << c.dump();
  for (const char* s :
       {"# Collective test starting: all_reduce_perf", "# Collective test starting: alltoallv_perf",
        "# Collective test starting: sendrecv_perf",
        "calls whose time differs most from the recorded durations", "# per rank (",
        "splits made up"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  EXPECT_NE(j["notes"].dump().find("all_to_all splits are not recorded"), std::string::npos)
      << j["notes"].dump();
}

TEST_F(RecordedJob, PyTorchDumpsOfTheJobReplayTheSameCalls) {
  const std::string out = (dir_ / "torch.json").string();
  const CliRun r =
      collie(fmt::format("replay {} -n 1 -w 0 -T 60 -J {}", (dir_ / "torch").string(), out));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json j = json::parse(std::ifstream(out));
  const auto plan = planned(j);
  for (int rank = 0; rank < kWorld; ++rank)
    EXPECT_EQ(plan.at(rank), read_calls(dir_ / "job", rank)) << "rank " << rank;
  // torch records no root: gather's and scatter's are read from who has the output / input;
  // broadcast and reduce (world, and both tp pairs) are replayed from rank 0, and that is said.
  const std::string notes = j["notes"].dump();
  EXPECT_NE(notes.find("root not recorded (PyTorch's dumps): replayed with root 0"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("4 ops: root not recorded"), std::string::npos) << notes;
  EXPECT_NE(notes.find("reduce op not recorded (PyTorch's dumps): replayed as sum"),
            std::string::npos)
      << notes;
}

TEST_F(RecordedJob, ASubsetOfRanksReplaysTheGroupsInsideIt) {
  const std::string out = (dir_ / "subset.json").string();
  const CliRun r =
      collie(fmt::format("replay {} --ranks 2,3 -n 1 -T 60 -J {}", (dir_ / "json").string(), out));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json j = json::parse(std::ifstream(out));
  EXPECT_EQ(j["played"], json({2, 3}));
  ASSERT_EQ(j["groups"].size(), 1u) << j["groups"].dump();
  EXPECT_EQ(j["groups"][0]["desc"], "tp");
  EXPECT_EQ(j["groups"][0]["dump_ranks"], json({2, 3}));
  const auto plan = planned(j);
  for (int rank : {2, 3}) {
    Calls tp;
    for (const std::string& c : read_calls(dir_ / "job", rank))
      if (c.rfind("tp ", 0) == 0) tp.push_back(c);
    EXPECT_EQ(plan.at(rank), tp) << rank;
  }
  EXPECT_NE(r.out.find("group 0 'default_pg' (ranks 0-3) is not replayed: ranks 0, 1 are not"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("group 3 'odd' (ranks 1, 3) is not replayed: rank 1 is not"),
            std::string::npos)
      << r.out;
}

// Issue 40: with COLLIE_FR_DUMP_DIR still exported from the job (the usual case), the replay's
// ranks wrote their own dumps over the ones replayed (those of ranks 0 and 1 with --ranks 2,3).
TEST_F(RecordedJob, TheReplayNeverWritesOverTheDumpsItReplays) {
  const fs::path same = dir_ / "same";
  fs::create_directories(same);
  std::map<std::string, std::string> before;
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  for (int rank = 0; rank < kWorld; ++rank) {
    const std::string f = fmt::format("collie_fr_rank_{}.json", rank);
    fs::copy_file(dir_ / "json" / f, same / f, fs::copy_options::overwrite_existing);
    before[f] = slurp(same / f);
  }
  const CliRun r = collie(fmt::format("replay {} --ranks 2,3 -n 1 -w 0 -T 60", same.string()),
                          "COLLIE_FR_DUMP_DIR=" + same.string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("not writing the replay's own flight-recorder dumps: COLLIE_FR_DUMP_DIR "
                       "is " +
                       same.string() + ", the folder being replayed"),
            std::string::npos)
      << r.err;
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(same)) {
    ++files;
    const std::string f = e.path().filename().string();
    ASSERT_TRUE(before.count(f)) << "the replay wrote " << f << " into the folder it replays";
    EXPECT_EQ(slurp(e.path()), before[f]) << f << " was overwritten";
  }
  EXPECT_EQ(files, before.size());
}

#ifdef MPIEXEC
TEST_F(RecordedJob, ReplaysUnderMpirunOnTheMpiBackend) {
  const fs::path fr = dir_ / "mpi_fr";
  fs::create_directories(fr);
  const std::string out = (dir_ / "mpi.json").string();
  const CliRun r = collie(
      fmt::format("replay {} --backend mpi -n 1 -w 0 -T 60 -J {}", (dir_ / "json").string(), out),
      fmt::format("OMPI_MCA_btl=self,vader COLLIE_FR_DUMP_DIR={} {} "
                  "--allow-run-as-root --oversubscribe -np 4 --mca "
                  "mpi_yield_when_idle 1",
                  fr.string(), MPIEXEC));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json j = json::parse(std::ifstream(out));
  EXPECT_EQ(j["backend"], "mpi");
  const auto plan = planned(j);
  const auto ran = recorded_by_replay(fr);
  for (int rank = 0; rank < kWorld; ++rank) {
    const Calls want = read_calls(dir_ / "job", rank);
    EXPECT_EQ(plan.at(rank), want) << rank;
    ASSERT_TRUE(ran.count(rank)) << rank;
    EXPECT_EQ(ran.at(rank).size(), want.size()) << rank;
  }
}
#endif

// Exit 2 and one line on stderr containing `words`.
void expect_refused(const std::string& args, const std::string& words) {
  const CliRun r = collie("replay " + args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.out << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(words), std::string::npos) << args << "\n" << r.err;
  EXPECT_EQ(r.out, "") << args;
}

TEST_F(RecordedJob, UnusableDumpsAndFlagsAreOneLine) {
  const std::string json_dir = (dir_ / "json").string();
  expect_refused(json_dir + " -np 3", "the dumps are of 4 ranks and the replay has 3");
  expect_refused(json_dir + " --ranks 0,9", "--ranks names rank 9, but the dumps are of 4 ranks");
  expect_refused(json_dir + " --ranks 0-x", "--ranks '0-x'");
  expect_refused(json_dir + " --max-bytes 16", "more than the 16 a replayed op may have");
  expect_refused((dir_ / "nothing").string(), "is not a directory");
  // A rank's dump missing: that rank's sequence is unknown.
  const fs::path three = dir_ / "three";
  fs::create_directories(three);
  for (int rank = 0; rank < 3; ++rank) {
    const std::string f = fmt::format("collie_fr_rank_{}.json", rank);
    fs::copy_file(dir_ / "json" / f, three / f, fs::copy_options::overwrite_existing);
  }
  expect_refused(three.string() + " -np 4", "no dump of rank 3");
  // A hostile dump (a size no buffer has): refused naming the file, as the analyzer reads it.
  std::ofstream(three / "collie_fr_rank_3.json")
      << R"({"rank": 3, "world_size": 4, "pg_config": {"0": {"desc": "default_pg", "ranks": [0, 1, 2, 3]}}, "entries": [{"pg_id": "0", "profiling_name": "gloo:all_reduce", "state": "completed", "collective_seq_id": 1, "input_sizes": [[1000000000000000]], "input_dtypes": ["float32"]}]})";
  expect_refused(three.string(), "more than the 1073741824 a replayed op may have");
  std::ofstream(three / "collie_fr_rank_3.json") << R"({"rank": 3, "entries": [{"pg_id": 7}]})";
  expect_refused(three.string(), "collie_fr_rank_3.json");
  // A group that lists a rank twice: refused before any rank starts, naming the dump (issue 40).
  std::ofstream(three / "collie_fr_rank_3.json")
      << R"({"rank": 3, "world_size": 4, "pg_config": {"0": {"desc": "default_pg", "ranks": [0, 1, 2, 3, 3]}}, "entries": []})";
  expect_refused(three.string(), "the dump of rank 3 lists rank 3 twice in the members of group");
}

}  // namespace
}  // namespace collie
