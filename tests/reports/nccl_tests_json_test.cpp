// nccl-tests' version-3 JSON both ways: the keys collie writes beside collie.perf.v1, and files
// as nccl-tests itself writes them read into collie's model (and by `collie report`'s loader).
#include "reports/nccl_tests_json.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "reports/json_io.h"
#include "reports/load.h"

namespace collie::reports {
namespace {

using nlohmann::json;

ResultRow row(const std::string& placement, double t, int64_t wrong) {
  ResultRow r;
  r.collective = "alltoall";
  r.placement = placement;
  r.size_bytes = 4096;
  r.count = 512;
  r.dtype = "float";
  r.redop = "none";
  r.root = -1;
  r.time_us = t;
  r.algbw_gbps = 4096 / 1e3 / t;
  r.busbw_gbps = r.algbw_gbps * 0.5;
  r.wrong = wrong;
  r.iters = 4;
  r.iter_skip = 1;
  r.rank_samples_us = {{10, 11, 12}, {14, 9, 13}};
  r.samples_us = {14, 11, 13};
  r.iter = compute_iter_stats(r.samples_us);
  r.rank_time_us = {11, 12};
  return r;
}

RunResult run() {
  RunResult r;
  r.meta.world_size = 2;
  r.meta.hosts = {"node-a", "node-b"};
  r.meta.backend = "gloo";
  r.meta.started_at = "2026-11-24T01:02:03Z";
  r.rows = {row("out", 12.5, 0), row("in", 11.25, -1), row("in", 9.0, -1)};
  r.rows[2].size_bytes = 8192;  // an in-place row without its out-of-place partner
  r.rows[2].count = 1024;
  return r;
}

NcclTestsConfig config() {
  NcclTestsConfig c;
  c.args = {"/usr/bin/collie", "perf", "alltoall"};
  c.min_bytes = 4096;
  c.max_bytes = 8192;
  c.per_iter = true;
  c.iter_skip = 1;
  c.pids = {100, 101};
  return c;
}

TEST(NcclTestsJson, WritesEveryVersion3Key) {
  const json j = to_nccl_tests_json(run(), config());
  for (const char* k : {"version", "start_time", "args", "env", "nccl_version", "config", "results",
                        "out_of_bounds", "average_bus_bandwidth", "end_time"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["version"], 3);
  EXPECT_EQ(j["start_time"], "2026-11-24 01:02:03");
  EXPECT_TRUE(j["end_time"].is_null());  // no summary yet: the run is in progress
  const json& c = j["config"];
  EXPECT_EQ(c["step_factor"], 2);
  EXPECT_FALSE(c.contains("step_bytes"));
  EXPECT_EQ(c["per_iter_timing"], "true");  // nccl-tests' booleans are strings
  EXPECT_EQ(c["blocking_collectives"], "false");
  EXPECT_EQ(c["per_iter_skip"], 1);
  ASSERT_EQ(c["devices"].size(), 2u);
  EXPECT_EQ(c["devices"][1]["hostname"], "node-b");
  EXPECT_EQ(c["devices"][1]["pid"], 101);
  ASSERT_EQ(j["results"].size(), 2u);  // out+in of 4096 share one result, 8192 is in-place only
  const json& r = j["results"][0];
  EXPECT_EQ(r["root"], "    -1");
  EXPECT_EQ(r["type"], "float");
  EXPECT_DOUBLE_EQ(r["out_of_place"]["time"].get<double>(), 12.5);
  EXPECT_EQ(r["out_of_place"]["nwrong"], 0.0);
  EXPECT_TRUE(r["in_place"]["nwrong"].is_null());
  EXPECT_EQ(r["experiment_name"], "alltoall_perf");
  EXPECT_EQ(r["collie"]["rows"]["in_place"], 1);
  const json& it = r["out_of_place_per_iter"];
  EXPECT_EQ(it["times_us"], json({14, 11, 13}));
  EXPECT_EQ(it["per_process_max_times_us"], json({{10, 11, 12}, {14, 9, 13}}));
  EXPECT_EQ(it["skipped_iterations"], 1);
  EXPECT_DOUBLE_EQ(it["avg_us"].get<double>(), 38.0 / 3);
  EXPECT_DOUBLE_EQ(it["max_us"].get<double>(), 14);
  EXPECT_TRUE(j["results"][1]["out_of_place"].is_null());
  EXPECT_EQ(j["average_bus_bandwidth"]["okay"], "unchecked");
  EXPECT_EQ(j["out_of_bounds"]["okay"], "true");
}

TEST(NcclTestsJson, DocumentCarriesBothLayoutsAndReadsBackThroughCollieKeys) {
  RunResult r = run();
  r.summary = summarize(r.rows, 2);
  r.meta.finished_at = "2026-11-24T01:05:00Z";
  const json j = to_results_document(r, config());
  EXPECT_EQ(j["schema"], kSchemaName);
  EXPECT_EQ(j["version"], 3);
  EXPECT_EQ(j["end_time"], "2026-11-24 01:05:00");
  EXPECT_FALSE(is_nccl_tests_json(j));  // collie's own file: read through the v1 keys
  const RunResult back = run_from_json(j);
  ASSERT_EQ(back.rows.size(), 3u);
  EXPECT_DOUBLE_EQ(back.rows[1].time_us, 11.25);
}

// Shaped as nccl-tests writes it (src/util.cu): root a padded string, nwrong a double or null,
// booleans as strings, no collective name but in args[0].
constexpr const char* kNcclTestsFile = R"({"version":3,"start_time":"2026-01-01 10:00:00",
"args":["./build/all_reduce_perf","-b","8","-e","16","-I","1"],"env":["NCCL_DEBUG=WARN"],
"nccl_version":22703,"config":{"nthreads":1,"ngpus":1,"minimum_bytes":8,"maximum_bytes":16,
"step_factor":2,"warmup_iters":1,"iterations":3,"aggregated_iterations":1,"validation":1,
"graph":0,"blocking_collectives":"false","per_iter_timing":"true","per_iter_skip":0,
"parallel_init":"false","devices":[{"rank":0,"group":0,"pid":1,"hostname":"gpu-01","device":0,
"device_hex":"0000:07:00","device_info":"NVIDIA H100"},{"rank":1,"group":0,"pid":2,
"hostname":"gpu-02","device":0,"device_hex":"0000:07:00","device_info":"NVIDIA H100"}]},
"results":[{"size":8,"count":2,"type":"float","redop":"sum","root":"    -1",
"out_of_place":{"time":10.500000,"alg_bw":0.000762,"bus_bw":0.000762,"nwrong":0.000000},
"in_place":{"time":9.250000,"alg_bw":0.000865,"bus_bw":0.000865,"nwrong":"nan"},
"out_of_place_per_iter":{"skipped_iterations":0,"min_us":9.0,"max_us":12.0,"avg_us":10.5,
"p99_us":12.0,"stdev_us":1.2,"cv_pct":11.6,"times_us":[9.0,10.5,12.0],
"per_process_max_times_us":[[9.0,10.0,12.0],[8.0,10.5,11.0]]},
"actual_iterations":3,"experiment_name":""},
{"size":16,"count":4,"type":"float","redop":"sum","root":"    -1",
"out_of_place":{"time":11.0,"alg_bw":0.00145,"bus_bw":0.00145,"nwrong":null},
"in_place":null,"actual_iterations":3,"experiment_name":""}],
"out_of_bounds":{"count":0,"okay":"true"},
"average_bus_bandwidth":{"bandwidth":0.001,"okay":"unchecked"},"errors":[],
"end_time":"2026-01-01 10:00:05"})";

TEST(NcclTestsJson, ReadsAFileNcclTestsWrote) {
  const json j = json::parse(kNcclTestsFile);
  ASSERT_TRUE(is_nccl_tests_json(j));
  const RunResult r = run_from_nccl_tests_json(j);
  EXPECT_EQ(r.meta.world_size, 2);
  EXPECT_EQ(r.meta.hosts, (std::vector<std::string>{"gpu-01", "gpu-02"}));
  EXPECT_EQ(r.meta.library_versions.at("nccl"), "2.27.3");
  ASSERT_EQ(r.rows.size(), 3u);
  const ResultRow& o = r.rows[0];
  EXPECT_EQ(o.collective, "all_reduce");
  EXPECT_EQ(o.placement, "out");
  EXPECT_EQ(o.root, -1);
  EXPECT_DOUBLE_EQ(o.time_us, 10.5);
  EXPECT_EQ(o.wrong, 0);
  EXPECT_EQ(o.samples_us, (std::vector<double>{9.0, 10.5, 12.0}));
  ASSERT_EQ(o.rank_time_us.size(), 2u);
  EXPECT_DOUBLE_EQ(o.rank_time_us[0], 31.0 / 3);
  EXPECT_EQ(o.slowest_rank, 0);
  EXPECT_EQ(o.iter.samples, 3);
  EXPECT_EQ(r.rows[1].placement, "in");
  EXPECT_EQ(r.rows[1].wrong, -1);  // nwrong "nan" (nccl-tests' spelling of NaN): no count
  EXPECT_EQ(r.rows[2].wrong, -1);  // nwrong null: unchecked
  EXPECT_EQ(r.rows[2].size_bytes, 16);
  ASSERT_TRUE(r.summary.has_value());
}

TEST(NcclTestsJson, CollieReportLoadsNcclTestsFilesAndNamesBadFields) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("nccl_tests_" + std::to_string(getpid()) + ".json"))
                               .string();
  std::ofstream(path) << kNcclTestsFile;
  const LoadedRun run = load_run(path);
  EXPECT_EQ(run.result.rows.size(), 3u);
  EXPECT_EQ(read_results(path).rows.size(), 3u);
  json bad = json::parse(kNcclTestsFile);
  bad["results"][0]["out_of_place"].erase("bus_bw");
  std::ofstream(path) << bad.dump();
  try {
    load_run(path);
    ADD_FAILURE() << "a result without bus_bw loaded";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'bus_bw'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(NcclTestsJson, WrittenNumbersReadBack) {
  RunResult r = run();
  r.summary = summarize(r.rows, 2);
  const RunResult back = run_from_nccl_tests_json(to_nccl_tests_json(r, config()));
  ASSERT_EQ(back.rows.size(), r.rows.size());
  for (size_t i = 0; i < r.rows.size(); ++i) {
    EXPECT_EQ(back.rows[i].placement, r.rows[i].placement);
    EXPECT_EQ(back.rows[i].size_bytes, r.rows[i].size_bytes);
    EXPECT_DOUBLE_EQ(back.rows[i].time_us, r.rows[i].time_us);
    EXPECT_DOUBLE_EQ(back.rows[i].busbw_gbps, r.rows[i].busbw_gbps);
    EXPECT_EQ(back.rows[i].wrong, r.rows[i].wrong);
    EXPECT_EQ(back.rows[i].samples_us, r.rows[i].samples_us);
    EXPECT_EQ(back.rows[i].rank_samples_us, r.rows[i].rank_samples_us);
    EXPECT_EQ(back.rows[i].collective, "alltoall");  // from experiment_name
  }
}

}  // namespace
}  // namespace collie::reports
