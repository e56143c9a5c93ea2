#include "debug/flight_recorder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/env.h"
#include "core/error.h"

namespace collie {
namespace {

std::shared_ptr<GroupTrace> trace(const std::string& id = "0") {
  auto g = std::make_shared<GroupTrace>();
  g->pg_id = id;
  g->desc = "default_pg";
  g->backend = "gloo";
  g->global_ranks = {0, 1, 2};
  g->global_rank = 1;
  g->rank = 1;
  return g;
}

OpCall call(OpType t, uint64_t seq, std::vector<float>& buf) {
  OpCall c;
  c.type = t;
  c.input = TensorView::cpu(buf.data(), buf.size(), DType::Float32);
  c.output = c.input;
  c.seq = seq;
  c.timeout = Millis(1000);
  c.peer = 2;
  return c;
}

// The caller's own clock reading is used as given (the tracing layer reads the clock once per
// event for the recorder and its observers), and a backend name too long for profiling_name is
// cut at the field's size, as fmt::format_to_n cut it.
TEST(FlightRecorder, GivenTimesAreKeptAndLongNamesAreCut) {
  FakeClock clock;
  FlightRecorder fr(4, &clock);
  auto g = trace();
  g->backend = std::string(60, 'b');
  fr.add_group(g);
  std::vector<float> buf(2);
  const uint64_t id = fr.record(*g, 1, call(OpType::AllReduce, 1, buf), 1111);
  fr.mark_completed(id, false, 5555);
  auto j = nlohmann::json::parse(fr.dump_json(1, "test"));
  const auto& e = j["entries"][0];
  EXPECT_EQ(e["time_created_ns"], 1111);
  EXPECT_EQ(e["time_discovered_completed_ns"], 5555);
  EXPECT_EQ(e["profiling_name"], std::string(FrEntry::kNameLen - 1, 'b'));
  g->backend = "mpi";
  fr.record(*g, 2, call(OpType::Broadcast, 2, buf));
  j = nlohmann::json::parse(fr.dump_json(1, "test"));
  EXPECT_EQ(j["entries"][1]["profiling_name"], "mpi:broadcast");
  EXPECT_EQ(j["entries"][1]["time_created_ns"], clock.wall_ns());
}

TEST(FlightRecorder, RingWrapKeepsNewestAndIgnoresStaleMarks) {
  FakeClock clock;
  FlightRecorder fr(3, &clock);
  auto g = trace();
  fr.add_group(g);
  std::vector<float> buf(4);
  std::vector<uint64_t> ids;
  for (uint64_t s = 1; s <= 5; ++s)
    ids.push_back(fr.record(*g, s, call(OpType::AllReduce, s, buf)));
  EXPECT_EQ(fr.total_recorded(), 5u);
  auto snap = fr.snapshot();
  ASSERT_EQ(snap.size(), 3u);
  EXPECT_EQ(snap[0].collective_seq_id, 3u);
  EXPECT_EQ(snap[2].collective_seq_id, 5u);
  fr.mark_completed(ids[0], false);  // overwritten slot: ignored
  fr.mark_started(ids[4]);
  snap = fr.snapshot();
  EXPECT_EQ(snap[0].state, FrState::Scheduled);
  EXPECT_EQ(snap[2].state, FrState::Started);
}

TEST(FlightRecorder, DumpHasTorchFieldNames) {
  FakeClock clock;
  FlightRecorder fr(8, &clock);
  auto g = trace();
  g->last_enqueued_collective = 2;
  g->last_completed_collective.raise(g->completing.mine(), 1);
  fr.add_group(g);
  std::vector<float> buf(6);
  OpCall c = call(OpType::AllReduce, 1, buf);
  Shape s;
  s.ndim = 2;
  s.dims[0] = 2;
  s.dims[1] = 3;
  c.input.shape = s;
  const uint64_t id = fr.record(*g, 1, c);
  fr.mark_started(id);
  clock.advance(std::chrono::milliseconds(3));
  fr.mark_completed(id, false);
  fr.record(*g, 2, call(OpType::Send, 1, buf));
  auto j = nlohmann::json::parse(fr.dump_json(1, "test"));
  EXPECT_EQ(j["version"], kFrDumpVersion);
  EXPECT_EQ(j["pg_config"]["0"]["desc"], "default_pg");
  EXPECT_EQ(j["pg_status"]["0"]["last_enqueued_collective"], 2);
  EXPECT_EQ(j["pg_status"]["0"]["last_completed_collective"], 1);
  ASSERT_EQ(j["entries"].size(), 2u);
  const auto& e = j["entries"][0];
  for (const char* k : {"record_id",
                        "pg_id",
                        "process_group",
                        "collective_seq_id",
                        "p2p_seq_id",
                        "op_id",
                        "profiling_name",
                        "time_created_ns",
                        "time_discovered_started_ns",
                        "time_discovered_completed_ns",
                        "duration_ms",
                        "input_sizes",
                        "input_dtypes",
                        "output_sizes",
                        "output_dtypes",
                        "state",
                        "retired",
                        "timeout_ms",
                        "is_p2p",
                        "thread_id",
                        "thread_name"}) {
    EXPECT_TRUE(e.contains(k)) << k;
  }
  EXPECT_EQ(e["profiling_name"], "gloo:all_reduce");
  EXPECT_EQ(e["process_group"], nlohmann::json::array({"0", "default_pg"}));
  EXPECT_EQ(e["input_sizes"], nlohmann::json::parse("[[2, 3]]"));
  EXPECT_EQ(e["input_dtypes"], nlohmann::json::parse("[\"float32\"]"));
  EXPECT_EQ(e["state"], "completed");
  EXPECT_EQ(e["retired"], true);
  EXPECT_DOUBLE_EQ(e["duration_ms"].get<double>(), 3.0);
  const auto& p = j["entries"][1];
  EXPECT_EQ(p["profiling_name"], "gloo:send 1->2");
  EXPECT_EQ(p["is_p2p"], true);
  EXPECT_EQ(p["p2p_seq_id"], 1);
  EXPECT_EQ(p["state"], "scheduled");
  EXPECT_TRUE(p["duration_ms"].is_null());
  EXPECT_EQ(j["wrapped"], false);
  // Only the newest entry: said like a ring that lost older history.
  auto newest = nlohmann::json::parse(fr.dump_json(1, "test", 1));
  ASSERT_EQ(newest["entries"].size(), 1u);
  EXPECT_EQ(newest["entries"][0]["profiling_name"], "gloo:send 1->2");
  EXPECT_EQ(newest["wrapped"], true);
}

TEST(FlightRecorder, DumpToDirIsAtomicAndParsable) {
  FlightRecorder fr(4);
  auto g = trace();
  fr.add_group(g);
  std::vector<float> buf(1);
  fr.record(*g, 1, call(OpType::Barrier, 1, buf));
  const auto dir =
      std::filesystem::temp_directory_path() / ("collie_fr_test_" + std::to_string(::getpid()));
  const std::string path = fr.dump_to_dir(dir.string(), 3, "unit test");
  EXPECT_EQ(std::filesystem::path(path).filename(), "collie_fr_rank_3.json");
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);  // no temp file left behind
  std::ifstream f(path);
  auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["rank"], 3);
  EXPECT_EQ(j["reason"], "unit test");
  std::filesystem::remove_all(dir);
}

// A dump into several folders (the first failure's: the folder and first-failure/) is written
// once: the second name is a hard link to the same file, and a later dump that replaces the
// folder's file leaves first-failure/'s as it was. The dump names its host and lists a group's
// ranks as ranges.
TEST(FlightRecorder, ADumpIntoTwoFoldersIsOneFile) {
  namespace fs = std::filesystem;
  FlightRecorder fr(4);
  auto g = trace();
  fr.add_group(g);
  std::vector<float> buf(1);
  fr.record(*g, 1, call(OpType::Barrier, 1, buf));
  const fs::path dir = fs::temp_directory_path() / ("collie_fr_link_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  FrDumpFormat both;
  both.torch = true;
  fr.dump_to_dir({dir.string(), (dir / "first-failure").string()}, 3, "first", both,
                 DumpTrigger::Failure);
  for (const char* name : {"collie_fr_rank_3.json", "nccl_trace_rank_3"}) {
    EXPECT_TRUE(fs::equivalent(dir / name, dir / "first-failure" / name)) << name;
    EXPECT_EQ(fs::hard_link_count(dir / name), 2u) << name;
  }
  fr.dump_to_dir(dir.string(), 3, "later", both, DumpTrigger::Request);
  const auto reason = [](const fs::path& p) {
    std::ifstream f(p);
    return nlohmann::json::parse(f)["reason"].get<std::string>();
  };
  EXPECT_EQ(reason(dir / "collie_fr_rank_3.json"), "later");
  EXPECT_EQ(reason(dir / "first-failure" / "collie_fr_rank_3.json"), "first");
  EXPECT_EQ(fs::hard_link_count(dir / "first-failure" / "collie_fr_rank_3.json"), 1u);
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 4);  // no temporary name left behind
  std::ifstream f(dir / "collie_fr_rank_3.json");
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["pg_config"]["0"]["ranks"], "0-2");
  EXPECT_FALSE(j["hostname"].get<std::string>().empty());
  fs::remove_all(dir);
}

TEST(FlightRecorder, CapacityFromEnv) {
  EXPECT_EQ(FlightRecorder::capacity_from_env(MapEnv(MapEnv::Map{})), 2000u);
  EXPECT_EQ(FlightRecorder::capacity_from_env(MapEnv(MapEnv::Map{{"COLLIE_FR_BUFFER_SIZE", "0"}})),
            0u);
  EXPECT_THROW(
      FlightRecorder::capacity_from_env(MapEnv(MapEnv::Map{{"COLLIE_FR_BUFFER_SIZE", "-1"}})),
      InvalidArgument);
  EXPECT_EQ(
      FlightRecorder::capacity_from_env(MapEnv(MapEnv::Map{{"COLLIE_FR_BUFFER_SIZE", "1000000"}})),
      FlightRecorder::kMaxCapacity);
  try {
    FlightRecorder::capacity_from_env(MapEnv(MapEnv::Map{{"COLLIE_FR_BUFFER_SIZE", "4000000000"}}));
    ADD_FAILURE() << "a 1.3 TB ring was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("COLLIE_FR_BUFFER_SIZE=4000000000 is not in 0..1000000"),
              std::string::npos)
        << e.what();
  }
  FlightRecorder off(0);
  auto g = trace();
  std::vector<float> buf(1);
  EXPECT_EQ(off.record(*g, 1, call(OpType::Barrier, 1, buf)), 0u);
  EXPECT_TRUE(off.snapshot().empty());
}

}  // namespace
}  // namespace collie
