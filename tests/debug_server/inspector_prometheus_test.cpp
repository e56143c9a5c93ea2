// NVIDIA's NCCL Inspector Grafana template against a real collie job: a real 2-process
// `collie perf` soak (all_reduce, all_gather, reduce_scatter, sendrecv) serves
// /metrics/inspector on its debug servers, a real Prometheus (Debian package) scrapes it with the
// shipped scripts/prometheus/nccl_inspector.yml, and every panel query of the template is
// evaluated through Prometheus's HTTP API as Grafana would (range queries). The single-host
// panels must show every size the job ran, under Inspector's bucket names, with numbers that
// agree with collie's own perf rows; the multi-host (NET) panels must be empty.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "debug_server/job_log.h"
#include "debug_server/prometheus_server.h"
#include "support/child_process.h"

namespace collie {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::ChildProcess;
using testing::rank0_debug_url;
using testing::read_file;
using namespace std::chrono_literals;

// The template's panel queries, verbatim (NVIDIA/nccl
// plugins/profiler/inspector/grafana/nccl-inspector-job-performance-template.json).
const std::vector<std::string> kTemplateQueries = {
    R"(avg by(message_size, nranks) (nccl_p2p_bus_bandwidth_gbs{cluster="$cluster", slurm_job_id="$jobid", p2p_operation="Recv", n_nodes="1"}))",
    R"(avg by(message_size, nranks) (nccl_p2p_exec_time_microseconds{cluster="$cluster", slurm_job_id="$jobid", p2p_operation="Recv", n_nodes="1"}))",
    R"(avg by(message_size, nranks, n_nodes) (nccl_p2p_bus_bandwidth_gbs{cluster="$cluster", slurm_job_id="$jobid", p2p_operation="Recv", n_nodes!="1"}))",
    R"(avg by(message_size, nranks, n_nodes) (nccl_p2p_exec_time_microseconds{cluster="$cluster", slurm_job_id="$jobid", p2p_operation="Recv", n_nodes!="1"}))",
    R"(avg by(message_size, nranks) (nccl_p2p_bus_bandwidth_gbs{cluster="$cluster", slurm_job_id="$jobid", p2p_operation="Send", n_nodes="1"}))",
    R"(avg by(message_size, nranks) (nccl_p2p_exec_time_microseconds{cluster="$cluster", slurm_job_id="$jobid", p2p_operation="Send", n_nodes="1"}))",
    R"(avg by(message_size, nranks, n_nodes) (nccl_p2p_bus_bandwidth_gbs{cluster="$cluster", slurm_job_id="$jobid", p2p_operation="Send", n_nodes!="1"}))",
    R"(avg by(message_size, nranks, n_nodes) (nccl_p2p_exec_time_microseconds{cluster="$cluster", slurm_job_id="$jobid", p2p_operation="Send", n_nodes!="1"}))",
    R"(avg by(message_size, nranks) (nccl_bus_bandwidth_gbs{cluster="$cluster", slurm_job_id="$jobid", collective="ReduceScatter", n_nodes="1"}))",
    R"(avg by(message_size, nranks) (nccl_collective_exec_time_microseconds{cluster="$cluster", slurm_job_id="$jobid", collective="ReduceScatter", n_nodes="1"}))",
    R"(avg by(message_size, nranks, n_nodes) (nccl_bus_bandwidth_gbs{cluster="$cluster", slurm_job_id="$jobid", collective="ReduceScatter", n_nodes!="1"}))",
    R"(avg by(message_size, nranks, n_nodes) (nccl_collective_exec_time_microseconds{cluster="$cluster", slurm_job_id="$jobid", collective="ReduceScatter", n_nodes!="1"}))",
    R"(avg by(message_size, nranks) (nccl_bus_bandwidth_gbs{cluster="$cluster", slurm_job_id="$jobid", collective="AllReduce", n_nodes="1"}))",
    R"(avg by(message_size, nranks) (nccl_collective_exec_time_microseconds{cluster="$cluster", slurm_job_id="$jobid", collective="AllReduce", n_nodes="1"}))",
    R"(avg by(message_size, nranks, n_nodes) (nccl_bus_bandwidth_gbs{cluster="$cluster", slurm_job_id="$jobid", collective="AllReduce", n_nodes!="1"}))",
    R"(avg by(message_size, nranks, n_nodes) (nccl_collective_exec_time_microseconds{cluster="$cluster", slurm_job_id="$jobid", collective="AllReduce", n_nodes!="1"}))",
    R"(avg by(message_size, nranks) (nccl_bus_bandwidth_gbs{cluster="$cluster", slurm_job_id="$jobid", collective="AllGather", n_nodes="1"}))",
    R"(avg by(message_size, nranks) (nccl_collective_exec_time_microseconds{cluster="$cluster", slurm_job_id="$jobid", collective="AllGather", n_nodes="1"}))",
    R"(avg by(message_size, nranks, n_nodes) (nccl_bus_bandwidth_gbs{cluster="$cluster", slurm_job_id="$jobid", collective="AllGather", n_nodes!="1"}))",
    R"(avg by(message_size, nranks, n_nodes) (nccl_collective_exec_time_microseconds{cluster="$cluster", slurm_job_id="$jobid", collective="AllGather", n_nodes!="1"}))",
};

constexpr const char* kCluster = "collie-test";
constexpr const char* kJobId = "4242";

// The job's sizes (nccl-tests' size column: 64K, 256K, 1M, 4M) under Inspector's bucket names.
// Inspector counts the per-rank buffer (count x type size), so all_gather's and
// reduce_scatter's buckets are those of size / nranks.
const std::map<std::string, std::string> kAllReduceBuckets = {
    {"64-65KB", "65536"}, {"256-257KB", "262144"}, {"1-2MB", "1048576"}, {"4-5MB", "4194304"}};
const std::map<std::string, std::string> kPerRankBuckets = {
    {"32-33KB", "65536"}, {"128-129KB", "262144"}, {"512-513KB", "1048576"}, {"2-3MB", "4194304"}};

struct PerfRows {
  std::vector<double> busbw, time_us;
  std::vector<double> best_busbw;  // of the row's fastest iteration
};

// collective -> size -> every row the soak wrote (every cycle, both placements).
std::map<std::string, std::map<std::string, PerfRows>> read_rows(const std::string& jsonl) {
  std::map<std::string, std::map<std::string, PerfRows>> out;
  std::istringstream in(jsonl);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const Json r = Json::parse(line);
    PerfRows& p = out[r.at("collective")][std::to_string(r.at("size_bytes").get<uint64_t>())];
    p.busbw.push_back(r.at("busbw_gbps"));
    p.time_us.push_back(r.at("time_us"));
    p.best_busbw.push_back(p.busbw.back() * p.time_us.back() /
                           r.at("iter_stats").at("min_us").get<double>());
  }
  return out;
}

double geomean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / v.size());
}
double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / v.size();
}

TEST(InspectorTemplate, RealJobFeedsEveryPanelWithCollieNumbers) {
  const fs::path src = fs::path(COLLIE_SOURCE_DIR) / "scripts";
  const fs::path dir = fs::temp_directory_path() / fmt::format("collie_insp_{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir / "targets");
  const std::string rows = (dir / "rows.jsonl").string();
  const auto t_start = std::chrono::system_clock::now();
  std::vector<std::string> argv = {COLLIE_CLI_PATH};
  std::istringstream flags(
      "perf -np 2 all_reduce all_gather reduce_scatter sendrecv -b 64K -e 4M -f 4 -w 0 -n 3 -c 0 "
      "--duration 25s --debug-port 0 --jsonl " +
      rows);
  for (std::string w; flags >> w;) argv.push_back(w);
  ChildProcess job(argv, {{"COLLIE_LOG_LEVEL", "info"},
                          {"COLLIE_CLUSTER", kCluster},
                          {"COLLIE_JOB_ID", kJobId},  // SLURM_JOB_ID would need srun
                          {"COLLIE_INSPECTOR_WINDOW", "2s"}});
  const std::string url = rank0_debug_url(job);
  ASSERT_FALSE(url.empty()) << job.err();
  const std::string sd = (src / "prometheus/collie_file_sd.py").string();
  ASSERT_EQ(std::system(fmt::format("python3 {} --from {} -o {}", sd, url,
                                    (dir / "targets/job.json").string())
                            .c_str()),
            0);
  testing::PrometheusServer prom(src / "prometheus/nccl_inspector.yml", dir);
  ASSERT_TRUE(prom.config_ok());

  // While the job runs: a rank's exposition, checked by promtool. Inspector's metric names end
  // in "microseconds", which promtool's unit lint names; nothing else may be reported.
  httplib::Client rank0(url);
  std::string exposition;
  for (int i = 0; i < 40 && exposition.find("nccl_p2p_bus_bandwidth_gbs{") == std::string::npos;
       ++i) {
    std::this_thread::sleep_for(500ms);
    auto m = rank0.Get("/metrics/inspector");
    ASSERT_TRUE(m && m->status == 200);
    exposition = m->body;
  }
  std::ofstream(dir / "inspector.prom") << exposition;
  std::system(fmt::format("promtool check metrics < {} > {} 2>&1",
                          (dir / "inspector.prom").string(), (dir / "promtool.txt").string())
                  .c_str());
  EXPECT_EQ(read_file((dir / "promtool.txt").string()),
            "nccl_collective_exec_time_microseconds use base unit \"seconds\" instead of "
            "\"microseconds\"\n"
            "nccl_p2p_exec_time_microseconds use base unit \"seconds\" instead of "
            "\"microseconds\"\n")
      << exposition;
  EXPECT_NE(exposition.find("nccl_bus_bandwidth_gbs{version=\"v5.1\",slurm_job_id=\"4242\","),
            std::string::npos)
      << exposition;

  ASSERT_EQ(job.wait(90s), std::optional<int>(0)) << job.err();
  const auto t_end = std::chrono::system_clock::now();
  std::this_thread::sleep_for(2s);  // the last scrapes land
  const auto perf = read_rows(read_file(rows));
  ASSERT_EQ(perf.size(), 4u) << read_file(rows);

  auto epoch = [](std::chrono::system_clock::time_point t) {
    return std::to_string(
        std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
  };
  for (std::string q : kTemplateQueries) {
    q = std::regex_replace(q, std::regex("\\$cluster"), kCluster);
    q = std::regex_replace(q, std::regex("\\$jobid"), kJobId);
    const Json j = prom.get(
        "/api/v1/query_range",
        {{"query", q}, {"start", epoch(t_start)}, {"end", epoch(t_end + 2s)}, {"step", "1"}});
    ASSERT_EQ(j.value("status", ""), "success") << q << "\n" << j.dump();
    const Json& result = j["data"]["result"];
    if (q.find("n_nodes!=\"1\"") != std::string::npos) {
      EXPECT_TRUE(result.empty()) << "one host: the NET panels stay empty\n" << q;
      continue;
    }
    std::smatch m;
    ASSERT_TRUE(std::regex_search(q, m, std::regex("(collective|p2p_operation)=\"(\\w+)\"")));
    const std::string op = m[2];
    const bool per_rank = op == "AllGather" || op == "ReduceScatter";
    const auto& buckets = per_rank ? kPerRankBuckets : kAllReduceBuckets;
    const std::string collective = op == "AllReduce"       ? "all_reduce"
                                   : op == "AllGather"     ? "all_gather"
                                   : op == "ReduceScatter" ? "reduce_scatter"
                                                           : "sendrecv";
    const bool bandwidth = q.find("bandwidth") != std::string::npos;
    std::set<std::string> seen;
    for (const auto& series : result) {
      const std::string bucket = series["metric"].value("message_size", "");
      EXPECT_EQ(series["metric"].value("nranks", ""), "2") << q;
      if (!buckets.count(bucket)) {
        // Not a size of the sweep: only perf's own small control ops (host names, timings).
        EXPECT_TRUE(std::regex_match(bucket, std::regex("[0-9]+-[0-9]+B"))) << q << " " << bucket;
        continue;
      }
      seen.insert(bucket);
      if (op == "Send") continue;  // a send may complete before its receive: no perf column
      std::vector<double> values;
      for (const auto& v : series["values"]) values.push_back(std::stod(v[1].get<std::string>()));
      ASSERT_FALSE(values.empty());
      const PerfRows& p = perf.at(collective).at(buckets.at(bucket));
      // Inspector's numbers per window: the mean time and the geometric mean of the per-op bus
      // bandwidth. collie's rows: the mean time of a row's iterations and the bandwidth of that
      // mean. Per op, AM >= GM >= min puts the geometric mean between the rows' bandwidth and
      // that of their fastest iterations. An op is timed from submit to completion in the
      // backend, an iteration until the waiting thread has woken up, which on a loaded machine
      // makes small ops look faster than their iterations (more slack below 1 MiB); a receive
      // is timed alone while perf's sendrecv iteration also posts the send (and copies in
      // place). The margins allow for that and for windows not aligned with rows, not for a
      // wrong factor of 2 on the slow side or a wrong unit.
      const double faster = op == "Recv"                                    ? 3
                            : std::stoull(buckets.at(bucket)) >= (1u << 20) ? 1.25
                                                                            : 2;
      if (bandwidth) {
        const double v = geomean(values);
        EXPECT_GT(v, geomean(p.busbw) / 1.25) << q << " " << bucket;
        EXPECT_LT(v, geomean(p.best_busbw) * faster) << q << " " << bucket;
      } else {
        const double v = mean(values);
        EXPECT_GT(v, mean(p.time_us) / faster / 1.25) << q << " " << bucket;
        EXPECT_LT(v, mean(p.time_us) * 1.5) << q << " " << bucket;
      }
    }
    std::set<std::string> want;
    for (const auto& [b, size] : buckets) want.insert(b);
    EXPECT_EQ(seen, want) << q << "\n" << result.dump();
  }
  prom.stop();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace collie
