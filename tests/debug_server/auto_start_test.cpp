// Real processes: four gloo ranks created by init_process_group with COLLIE_DEBUG_PORT=0 each
// start their debug server automatically, publish it in the store, and the cluster view and
// /metrics on rank 0 reflect the collectives the ranks really ran (fed by TracingProcessGroup);
// the cluster view and `collie analyze --live` run the hang analyzer on the ranks' live flight
// recorders.
#include "debug_server/auto_start.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "debug/flight_recorder.h"
#include "debug_server/server.h"
#include "metrics/live_status.h"
#include "metrics/metrics.h"
#include "store/prefix_store.h"
#include "store/tcp_store.h"
#include "support/multiprocess.h"

namespace collie {
namespace {

TEST(DebugServerAutoStart, FourGlooRanksServeClusterViewAndMetrics) {
  setenv("COLLIE_DEBUG_PORT", "0", 1);
  const std::string dumps = fmt::format("/tmp/collie_autostart_dumps_{}", getpid());
  std::filesystem::remove_all(dumps);
  setenv("COLLIE_FR_DUMP_DIR", dumps.c_str(), 1);
  auto result = testing::run_ranks(
      4,
      [](testing::RankContext& ctx) {
        std::vector<float> v(1024, 1.0f);
        for (int i = 0; i < 5; ++i) {
          ctx.pg->all_reduce(TensorView::cpu(v.data(), v.size(), DType::Float32))->wait();
        }
        DebugServer* s = process_debug_server();
        testing::check(s != nullptr, "rank {}: no debug server started", ctx.rank);
        ctx.pg->barrier()->wait();  // every rank has finished its all_reduces
        if (ctx.rank == 0) {
          httplib::Client cli("127.0.0.1", s->port());
          cli.set_read_timeout(10, 0);
          // Ranks 1-3 go on into the final barrier (#7) while rank 0 is busy here: live, rank 0
          // is the straggler the analysis must name, and the others wait in barrier #7.
          nlohmann::json j;
          for (int i = 0; i < 50; ++i) {
            auto r = cli.Get("/v1/cluster/status?timeout_ms=3000&stall_ms=300");
            testing::check(r && r->status == 200, "cluster status failed");
            j = nlohmann::json::parse(r->body);
            if (j["ranks"][1]["state"] == "ok" && j["ranks"][3]["state"] == "ok" &&
                j["ranks"][2]["state"] == "stalled" && j["ranks"][0]["state"] == "straggler") {
              break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
          }
          for (const auto& rk : j["ranks"]) {
            testing::check(rk["reachable"].get<bool>(), "rank {} unreachable: {}",
                           rk["rank"].get<int>(), rk.dump());
            const auto& g = rk["status"]["groups"][0];
            testing::check(g["last_completed_seq"].get<uint64_t>() == 6,
                           "rank {} last completed {}", rk["rank"].get<int>(), g.dump());
          }
          const auto& f = j["analysis"]["findings"][0];
          testing::check(f["kind"] == "NOT_ALL_JOINED" && f["culprits"] == "0" &&
                             f["message"].get<std::string>().rfind(
                                 "Not all ranks joining collective, sequence number: 7\n  ranks "
                                 "1-3 (barrier) joined and waited",
                                 0) == 0,
                         "analysis: {}", j["analysis"].dump());
          testing::check(j["ranks"][2]["status"]["groups"][0]["inflight"][0]["op"] == "barrier",
                         "rank 2 should wait in the barrier: {}", j["ranks"][2].dump());
          // The same analysis from a terminal, through the job's TcpStore.
          auto prefixed = std::dynamic_pointer_cast<PrefixStore>(ctx.pg->info().store);
          auto tcp = std::dynamic_pointer_cast<TcpStore>(prefixed ? prefixed->base() : nullptr);
          testing::check(tcp != nullptr, "rank 0 has no TcpStore");
          FILE* p = popen(fmt::format("{} analyze --live {}:{} --timeout 3s --stall 300ms",
                                      COLLIE_CLI_PATH, tcp->host(), tcp->port())
                              .c_str(),
                          "r");
          std::string out;
          char buf[1024];
          while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
          const int rc = pclose(p);
          // The live-status tree's summary and verdict, then (a small world) the report
          // `collie analyze DUMP_DIR` prints, from the live ranks.
          testing::check(
              WEXITSTATUS(rc) == 1 &&
                  out.rfind("collie analyze --live: 4 of 4 ranks answered (0-3) in ", 0) == 0 &&
                  out.find("NOT_JOINED: group 0 (default_pg): rank 0 ") != std::string::npos &&
                  out.find("Not all ranks joining collective, sequence number: 7") !=
                      std::string::npos &&
                  out.find("[0] finished collective #6, but didn't join collective "
                           "#7") != std::string::npos &&
                  out.find("Culprit rank: 0 on host ") != std::string::npos,
              "analyze --live (rc {}): {}", rc, out);
          auto m = cli.Get("/metrics");
          testing::check(m && m->status == 200, "metrics failed");
          const std::regex ops(
              "collie_collective_ops_total\\{backend=\"gloo\",collective=\"all_reduce\","
              "rank=\"0\",size_class=\"le_4KiB\"\\} 5\n");
          testing::check(std::regex_search(m->body, ops), "metrics: {}", m->body);
          // The dump trigger: every rank's flight recorder is written to COLLIE_FR_DUMP_DIR.
          auto d = cli.Post("/v1/dump?reason=test", httplib::Headers{{"X-Collie-Request", "1"}}, "",
                            "text/plain");
          testing::check(d && d->status == 200, "POST /v1/dump failed");
        }
        ctx.pg->barrier()->wait();  // keep every server up until rank 0 is done
        const std::string dump =
            fmt::format("{}/collie_fr_rank_{}.json", getenv("COLLIE_FR_DUMP_DIR"), ctx.rank);
        for (int i = 0; i < 100 && !std::filesystem::exists(dump); ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        testing::check(std::filesystem::exists(dump), "rank {} wrote no dump after POST /v1/dump",
                       ctx.rank);
      },
      [] {
        testing::RunOptions o;
        o.mode = testing::Mode::Processes;
        return o;
      }());
  unsetenv("COLLIE_DEBUG_PORT");
  unsetenv("COLLIE_FR_DUMP_DIR");
  std::filesystem::remove_all(dumps);
  EXPECT_TRUE(result.ok()) << result.summary();
}

// The other direction: without a debug server (no COLLIE_DEBUG_PORT, no --debug-port) nothing
// can read the process's metrics, so the stack gives its groups no metrics observer: the ops run
// and the flight recorder traces them, and the process's live status and op counters stay empty.
TEST(DebugServerAutoStart, WithoutAServerTheStackFeedsNoMetrics) {
  unsetenv("COLLIE_DEBUG_PORT");
  auto result = testing::run_ranks(
      2,
      [](testing::RankContext& ctx) {
        const uint64_t recorded = FlightRecorder::global().total_recorded();
        std::vector<float> v(16, 1.0f);
        for (int i = 0; i < 5; ++i) {
          ctx.pg->all_reduce(TensorView::cpu(v.data(), v.size(), DType::Float32))->wait();
        }
        testing::check(process_debug_server() == nullptr, "rank {}: a debug server started",
                       ctx.rank);
        testing::check(FlightRecorder::global().total_recorded() >= recorded + 5,
                       "rank {}: the flight recorder did not trace the all_reduces", ctx.rank);
        const auto groups = LiveStatus::global().snapshot();
        testing::check(groups.empty(), "rank {}: live status has {} groups", ctx.rank,
                       groups.size());
        const std::string text = Metrics::global().serialize(&LiveStatus::global());
        testing::check(text.find("collie_collective_ops_total{") == std::string::npos,
                       "rank {}: op counters without a server: {}", ctx.rank, text);
      },
      [] {
        testing::RunOptions o;
        o.mode = testing::Mode::Processes;
        return o;
      }());
  EXPECT_TRUE(result.ok()) << result.summary();
}

}  // namespace
}  // namespace collie
