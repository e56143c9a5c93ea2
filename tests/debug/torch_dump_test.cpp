// PyTorch's dump layout (debug/torch_dump.h): the recorder written as torch writes it (types of
// every field as FlightRecorderDetail.hpp has them), read back through collie's reader to the
// same analyzer model as collie's JSON dump, and the dump-format settings.
#include "debug/torch_dump.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "core/clock.h"
#include "core/env.h"
#include "core/error.h"
#include "debug/flight_recorder.h"
#include "debug/pickle.h"

namespace collie {
namespace {

using nlohmann::json;

struct Recorded {
  FakeClock clock;
  FlightRecorder fr{16, &clock};
  std::shared_ptr<GroupTrace> g = std::make_shared<GroupTrace>();
  std::vector<float> buf = std::vector<float>(8);

  explicit Recorded(const std::string& backend = "gloo") {
    g->pg_id = "0";
    g->desc = "default_pg";
    g->backend = backend;
    g->global_ranks = {0, 1, 2};
    g->rank = g->global_rank = 1;
    fr.add_group(g);
    const uint64_t a = fr.record(*g, 1, call(OpType::AllReduce, 1));
    fr.mark_started(a);
    fr.mark_completed(a, false);
    fr.mark_started(fr.record(*g, 2, call(OpType::Broadcast, 2)));
    fr.record(*g, 3, call(OpType::Send, 1));
    fr.record(*g, 4, call(OpType::Barrier, 3));
    g->last_enqueued_collective = 3;
    g->last_started_collective = 2;
    g->last_completed_collective.raise(g->completing.mine(), 1);
  }
  OpCall call(OpType t, uint64_t seq) {
    OpCall c;
    c.type = t;
    if (t != OpType::Barrier) {
      c.input = TensorView::cpu(buf.data(), buf.size(), DType::Float32);
      c.output = c.input;
    }
    c.seq = seq;
    c.timeout = Millis(5000);
    c.peer = 2;
    c.root = 0;
    return c;
  }
};

TEST(TorchDump, WritesTorchsLayoutAndTypes) {
  Recorded r;
  const json j = parse_pickle(torch_dump_pickle(r.fr));
  EXPECT_EQ(j["version"], "2.10");
  EXPECT_EQ(j["pg_config"]["0"], json::parse(R"({"name": "0", "desc": "default_pg",
                                                  "ranks": "[0, 1, 2]"})"));
  EXPECT_EQ(j["pg_status"]["0"]["last_enqueued_collective"], 3);
  ASSERT_EQ(j["entries"].size(), 4u);
  const json& ar = j["entries"][0];
  std::set<std::string> keys;
  for (const auto& [k, v] : ar.items()) keys.insert(k);
  EXPECT_EQ(keys, (std::set<std::string>{"frames",
                                         "record_id",
                                         "pg_id",
                                         "process_group",
                                         "thread_name",
                                         "thread_id",
                                         "collective_seq_id",
                                         "p2p_seq_id",
                                         "op_id",
                                         "profiling_name",
                                         "time_created_ns",
                                         "duration_ms",
                                         "input_sizes",
                                         "input_dtypes",
                                         "output_sizes",
                                         "output_dtypes",
                                         "state",
                                         "time_discovered_started_ns",
                                         "time_discovered_completed_ns",
                                         "retired",
                                         "timeout_ms",
                                         "is_p2p"}));
  EXPECT_EQ(ar["frames"], json::array());
  EXPECT_EQ(ar["pg_id"], 0);
  EXPECT_EQ(ar["process_group"], json::array({"0", "default_pg"}));
  EXPECT_TRUE(ar["thread_id"].is_string());
  EXPECT_EQ(ar["profiling_name"], "gloo:all_reduce");
  EXPECT_EQ(ar["input_sizes"], json::parse("[[8]]"));
  EXPECT_EQ(ar["input_dtypes"], json::array({"Float"}));
  EXPECT_EQ(ar["output_sizes"], json::parse("[[8]]"));
  EXPECT_EQ(ar["state"], "completed");
  EXPECT_TRUE(ar["duration_ms"].is_number_float());
  EXPECT_EQ(ar["retired"], true);
  EXPECT_EQ(ar["timeout_ms"], 5000);
  EXPECT_EQ(ar["is_p2p"], false);
  const json& bc = j["entries"][1];
  EXPECT_EQ(bc["state"], "started");
  EXPECT_FALSE(bc.contains("duration_ms"));
  EXPECT_TRUE(bc["time_discovered_completed_ns"].is_null());
  const json& send = j["entries"][2];
  EXPECT_EQ(send["profiling_name"], "gloo:send 1->2");  // group ranks
  EXPECT_EQ(send["is_p2p"], true);
  EXPECT_EQ(send["p2p_seq_id"], 1);
  const json& barrier = j["entries"][3];
  EXPECT_EQ(barrier["profiling_name"], "gloo:barrier");
  EXPECT_EQ(barrier["input_sizes"], json::array());
  EXPECT_EQ(barrier["state"], "scheduled");
  EXPECT_TRUE(barrier["time_discovered_started_ns"].is_null());
}

// An op that failed (its timeout fired) is still in flight in torch's dumps, which retire an
// entry only when its work completes: written as started, not as a completed op (which made the
// rank that gave up look idle outside collectives to an analyzer).
TEST(TorchDump, AFailedOpIsWrittenAsStillInFlight) {
  Recorded r;
  const uint64_t id = r.fr.record(*r.g, 5, r.call(OpType::AllReduce, 4));
  r.fr.mark_started(id);
  r.clock.advance(std::chrono::seconds(30));
  r.fr.mark_completed(id, /*failed=*/true);
  const json j = parse_pickle(torch_dump_pickle(r.fr));
  const json& e = j["entries"].back();
  EXPECT_EQ(e["state"], "started");
  EXPECT_TRUE(e["time_discovered_completed_ns"].is_null());
  EXPECT_FALSE(e.contains("duration_ms"));
  EXPECT_EQ(e["retired"], false);
  EXPECT_EQ(j["entries"][0]["state"], "completed");  // one that completed stays so
}

TEST(TorchDump, BackendsTorchDoesNotKnowAreWrittenAsGlooOrAsConfigured) {
  Recorded mpi("mpi");
  EXPECT_EQ(parse_pickle(torch_dump_pickle(mpi.fr))["entries"][0]["profiling_name"],
            "gloo:all_reduce");
  EXPECT_EQ(parse_pickle(torch_dump_pickle(mpi.fr, "nccl"))["entries"][0]["profiling_name"],
            "nccl:all_reduce");
}

TEST(TorchDump, ReadsBackLikeCollieJsonDump) {
  Recorded r;
  const RankDump t = parse_torch_dump(torch_dump_pickle(r.fr), 1);
  const RankDump c = parse_dump(r.fr.dump_json(1, "test"));
  EXPECT_EQ(t.rank, 1);
  EXPECT_EQ(t.world_size, 3);
  ASSERT_EQ(t.groups.count("0"), 1u);
  EXPECT_EQ(t.groups.at("0").ranks, c.groups.at("0").ranks);
  EXPECT_EQ(t.groups.at("0").last_enqueued, 3u);
  EXPECT_EQ(t.groups.at("0").last_completed, 1u);
  ASSERT_EQ(t.entries.size(), c.entries.size());
  for (size_t i = 0; i < t.entries.size(); ++i) {
    SCOPED_TRACE(c.entries[i].profiling_name);
    EXPECT_EQ(t.entries[i].record_id, c.entries[i].record_id);
    EXPECT_EQ(t.entries[i].pg_id, c.entries[i].pg_id);
    EXPECT_EQ(t.entries[i].collective_seq_id, c.entries[i].collective_seq_id);
    EXPECT_EQ(t.entries[i].p2p_seq_id, c.entries[i].p2p_seq_id);
    EXPECT_EQ(t.entries[i].op, c.entries[i].op);
    EXPECT_EQ(t.entries[i].sizes, c.entries[i].sizes);
    EXPECT_EQ(t.entries[i].dtypes, c.entries[i].dtypes);
    EXPECT_EQ(t.entries[i].state, c.entries[i].state);
    EXPECT_EQ(t.entries[i].is_p2p, c.entries[i].is_p2p);
    EXPECT_EQ(t.entries[i].peer, c.entries[i].peer);
    EXPECT_EQ(t.entries[i].time_created_ns, c.entries[i].time_created_ns);
  }
}

TEST(TorchDump, ReadsWhatTorchsTestsBuild) {
  // test_fr_analysis.py's create_one_entry: seq ids as decimal strings, dtypes one string.
  PickleWriter w;
  w.json(json::parse(R"({"version": "2.8", "pg_config": {"0": {"name": "0", "desc": "default_pg",
      "ranks": "[0, 1]"}}, "entries": [{"profiling_name": "nccl:all_reduce", "state": "completed",
      "process_group": ["0", "default"], "input_sizes": [[4, 4]], "output_sizes": [[4, 4]],
      "input_dtypes": "float32", "output_dtypes": "float32", "collective_seq_id": "1",
      "p2p_seq_id": "0", "time_created_ns": 0, "frames": [], "record_id": 0, "is_p2p": false}]})"));
  const RankDump d = parse_torch_dump(w.finish(), 1);
  EXPECT_EQ(d.world_size, 2);
  ASSERT_EQ(d.entries.size(), 1u);
  EXPECT_EQ(d.entries[0].collective_seq_id, 1u);
  EXPECT_EQ(d.entries[0].op, "all_reduce");
  EXPECT_EQ(d.entries[0].dtypes, R"(["float32"])");
}

TEST(TorchDump, MalformedDumpsAreOneLineErrors) {
  auto err = [](const std::string& text) {
    PickleWriter w;
    w.json(json::parse(text));
    try {
      parse_torch_dump(w.finish(), 0);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(err("[1, 2]").find("not a dict"), std::string::npos);
  EXPECT_NE(err(R"({"entries": []})").find("pg_config"), std::string::npos);
  EXPECT_NE(err(R"({"pg_config": {"0": {"ranks": "[0, x]"}}})").find("ranks"), std::string::npos);
  EXPECT_NE(err(R"({"pg_config": {"0": {"ranks": "[0, 1]"}}, "entries": [{"state": "x"}]})")
                .find("process_group"),
            std::string::npos);
  EXPECT_NE(err(R"({"pg_config": {"0": {"ranks": "[0, 1]"}}, "entries": [{"process_group":
      ["0", ""], "profiling_name": "nccl:all_reduce", "state": "completed",
      "collective_seq_id": -4}]})")
                .find("negative"),
            std::string::npos);
}

TEST(TorchDump, RankFromFileName) {
  EXPECT_EQ(torch_dump_rank("nccl_trace_rank_3"), 3);
  EXPECT_EQ(torch_dump_rank("my_job-12"), 12);
  EXPECT_EQ(torch_dump_rank("nccl_trace_rank_"), std::nullopt);
  EXPECT_EQ(torch_dump_rank("dump_99999999"), std::nullopt);
}

TEST(TorchDump, FormatFromEnv) {
  using M = MapEnv::Map;
  FrDumpFormat d = FrDumpFormat::from_env(MapEnv(M{}));
  EXPECT_TRUE(d.json);
  EXPECT_FALSE(d.torch);
  EXPECT_EQ(d.torch_prefix, "nccl_trace_rank_");
  // torch 2.11's fr_trace stops at any profiling_name but nccl:/xccl: (seen on the GPU machine,
  // docs/gpu-results.md): the default is what every release reads; "group" keeps each group's.
  EXPECT_EQ(d.torch_backend, "nccl");
  EXPECT_EQ(FrDumpFormat::from_env(MapEnv(M{{"COLLIE_FR_TORCH_BACKEND", "group"}})).torch_backend,
            "");
  EXPECT_EQ(FrDumpFormat::from_env(MapEnv(M{{"COLLIE_FR_TORCH_BACKEND", "gloo"}})).torch_backend,
            "gloo");
  FrDumpFormat t = FrDumpFormat::from_env(
      MapEnv(M{{"COLLIE_FR_DUMP_FORMAT", "torch"}, {"COLLIE_FR_DUMP_PREFIX", "job_rank_"}}));
  EXPECT_FALSE(t.json);
  EXPECT_TRUE(t.torch);
  EXPECT_EQ(t.torch_prefix, "job_rank_");
  FrDumpFormat both = FrDumpFormat::from_env(MapEnv(M{{"COLLIE_FR_DUMP_FORMAT", "json,torch"}}));
  EXPECT_TRUE(both.json && both.torch);
  EXPECT_THROW(FrDumpFormat::from_env(MapEnv(M{{"COLLIE_FR_DUMP_FORMAT", "pickle"}})),
               InvalidArgument);
  EXPECT_THROW(FrDumpFormat::from_env(MapEnv(M{{"COLLIE_FR_DUMP_PREFIX", "rank7"}})),
               InvalidArgument);
  EXPECT_THROW(FrDumpFormat::from_env(MapEnv(M{{"COLLIE_FR_DUMP_PREFIX", "a/b_"}})),
               InvalidArgument);
}

TEST(TorchDump, DumpToDirWritesBothAndAnalyzeKeepsOneDumpPerRank) {
  namespace fs = std::filesystem;
  Recorded r;
  const fs::path dir =
      fs::temp_directory_path() / ("collie_torch_dump_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  FrDumpFormat f;
  f.torch = true;
  const std::string paths = r.fr.dump_to_dir(dir.string(), 1, "test", f);
  EXPECT_NE(paths.find("collie_fr_rank_1.json"), std::string::npos) << paths;
  EXPECT_NE(paths.find("nccl_trace_rank_1"), std::string::npos) << paths;
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"collie_fr_rank_1.json", "nccl_trace_rank_1"}));
  std::vector<std::string> errors;
  EXPECT_EQ(load_dump_dir(dir.string(), errors).size(), 1u);
  EXPECT_TRUE(errors.empty()) << errors.front();
  // The torch dump alone is found by its content, whatever its name.
  fs::remove(dir / "collie_fr_rank_1.json");
  fs::rename(dir / "nccl_trace_rank_1", dir / "anything_7");
  const auto dumps = load_dump_dir(dir.string(), errors);
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(dumps[0].rank, 7);
  EXPECT_EQ(dumps[0].entries.size(), 4u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace collie
