#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>

#include "core/error.h"
#include "debug_server/test_cluster.h"
#include "discovery/network_choices.h"
#include "support/time_scale.h"

namespace collie {
namespace {

using testing::http_get;
using testing::scaled;
using testing::TestCluster;
using Json = nlohmann::json;

TEST(DebugServer, StatusConfigAndMetrics) {
  setenv("COLLIE_DEBUG_TOKEN_TEST_SECRET", "hunter2", 1);
  setenv("COLLIE_TIMEOUT", "30s", 1);
  TestCluster c(2);
  c.run_collectives(3);
  c.hang_next(-1);  // both ranks have #4 in flight

  auto h = http_get(c.port(0), "/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(h->body, "ok\n");

  auto s = http_get(c.port(1), "/v1/status");
  ASSERT_TRUE(s);
  ASSERT_EQ(s->status, 200);
  Json j = Json::parse(s->body);
  EXPECT_EQ(j["rank"], 1);
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_EQ(j["pid"], getpid());
  EXPECT_EQ(j["backend"], "gloo");
  ASSERT_EQ(j["groups"].size(), 1u);
  const Json& g = j["groups"][0];
  EXPECT_EQ(g["last_completed_seq"], 3);
  EXPECT_EQ(g["last_started_seq"], 4);
  EXPECT_EQ(g["last_enqueued_seq"], 4);
  EXPECT_EQ(g["last_completed_op"], "all_reduce");
  ASSERT_EQ(g["inflight"].size(), 1u);
  EXPECT_EQ(g["inflight"][0]["seq"], 4);
  EXPECT_GE(g["inflight"][0]["age_s"].get<double>(), 0.0);

  auto cfg = http_get(c.port(0), "/v1/config");
  ASSERT_TRUE(cfg);
  Json conf = Json::parse(cfg->body);
  EXPECT_EQ(conf["env"]["COLLIE_TIMEOUT"], "30s");
  EXPECT_EQ(conf["env"]["COLLIE_DEBUG_TOKEN_TEST_SECRET"], "<redacted>");
  EXPECT_EQ(cfg->body.find("hunter2"), std::string::npos);
  EXPECT_TRUE(conf.contains("debug_level"));
  EXPECT_TRUE(conf.contains("version"));
  // The process's network choices (what Gloo bound and why) are served as recorded.
  record_network_choice(
      {"gloo", "10.9.8.7 (eth9)", "route to rendezvous host n1 leaves through eth9"});
  cfg = http_get(c.port(0), "/v1/config");
  ASSERT_TRUE(cfg);
  conf = Json::parse(cfg->body);
  EXPECT_EQ(conf["network"]["gloo"]["value"], "10.9.8.7 (eth9)") << cfg->body;
  EXPECT_EQ(conf["network"]["gloo"]["reason"], "route to rendezvous host n1 leaves through eth9");

  auto m = http_get(c.port(0), "/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u);
  EXPECT_NE(m->body.find("collie_collective_ops_total{backend=\"gloo\",collective=\"all_reduce\","
                         "rank=\"0\",size_class=\"le_1KiB\"} 3"),
            std::string::npos)
      << m->body;
  EXPECT_NE(m->body.find("collie_inflight_ops{backend=\"gloo\",pg=\"0\",rank=\"0\"} 1"),
            std::string::npos);
  const std::string path = "/tmp/collie_ds_metrics.txt";
  std::ofstream(path) << m->body;
  FILE* p = popen(fmt::format("promtool check metrics < {} 2>&1", path).c_str(), "r");
  char buf[512];
  std::string out;
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0);
  EXPECT_EQ(out, "");
  std::remove(path.c_str());
}

TEST(DebugServer, FlightRecorderDumpAndStacks) {
  DebugServerOptions base;
  base.flight_recorder_json = [](size_t) {
    return std::string(R"({"version":"2.2","entries":[]})");
  };
  TestCluster c(1, base);
  auto fr = http_get(c.port(0), "/v1/flight_recorder");
  ASSERT_TRUE(fr);
  EXPECT_EQ(fr->status, 200);
  EXPECT_EQ(Json::parse(fr->body)["version"], "2.2");

  httplib::Client cli("127.0.0.1", c.port(0));
  auto d = cli.Post("/v1/dump?reason=test", httplib::Headers{{"X-Collie-Request", "1"}}, "",
                    "text/plain");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->status, 200);
  // The counter every rank's DumpService watches, and who asked.
  EXPECT_EQ(c.store().add("dump_request", 0), 1);
  Json req = Json::parse(c.store().get_string("dump_request/last"));
  EXPECT_EQ(req["reason"], "test");
  EXPECT_EQ(req["requested_by_rank"], 0);

  // A named thread parked in a blocking call must show up with a symbolized stack.
  std::atomic<bool> stop{false};
  std::thread parked([&] {
    pthread_setname_np(pthread_self(), "collie-parked");
    while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // 60 s: under ThreadSanitizer, signalling and symbolizing every thread takes over 10 s.
  auto st = http_get(c.port(0), "/v1/stacks?max_frames=32", 60);
  stop = true;
  parked.join();
  ASSERT_TRUE(st);
  ASSERT_EQ(st->status, 200) << st->body;
  Json threads = Json::parse(st->body)["threads"];
  bool found = false;
  for (const auto& t : threads) {
    if (t["name"] != "collie-parked") continue;
    found = true;
    ASSERT_TRUE(t.contains("frames")) << t.dump();
    std::string all = t["frames"].dump();
    EXPECT_TRUE(all.find("nanosleep") != std::string::npos ||
                all.find("sleep_for") != std::string::npos)
        << all;
  }
  EXPECT_TRUE(found) << threads.dump();
  EXPECT_GE(threads.size(), 3u);  // main, listener, pool workers, parked
}

TEST(DebugServer, NoTokenNoPublicBindAndTokenIsEnforced) {
  DebugServerOptions o;
  o.bind_host = "0.0.0.0";
  try {
    DebugServer::start(o);
    FAIL() << "binding 0.0.0.0 without a token must be refused";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("COLLIE_DEBUG_TOKEN"), std::string::npos);
  }
  o.token = "s3cret";
  auto s = DebugServer::start(o);
  httplib::Client cli("127.0.0.1", s->port());
  cli.set_read_timeout(5, 0);
  auto no = cli.Get("/v1/status");
  ASSERT_TRUE(no);
  EXPECT_EQ(no->status, 401);
  auto wrong = cli.Get("/v1/status", {{"Authorization", "Bearer nope"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto ok = cli.Get("/v1/status", {{"Authorization", "Bearer s3cret"}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  auto health = cli.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

int raw_connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

TEST(DebugServer, BadRequestsGet4xxAndNeverWedgeTheServer) {
  // The server answers an oversized upload (413) or header and closes while the client is still
  // writing; cpp-httplib 0.11's client writes without MSG_NOSIGNAL, so without this the test
  // process itself would die of SIGPIPE instead of seeing the closed connection.
  std::signal(SIGPIPE, SIG_IGN);
  DebugServerOptions o;
  o.io_timeout = std::chrono::seconds(1);
  TestCluster c(1, o);
  const int port = c.port(0);

  auto nf = http_get(port, "/v1/nope");
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->status, 404);
  EXPECT_NE(Json::parse(nf->body)["error"].get<std::string>().find("/v1/status"),
            std::string::npos);
  for (const char* bad : {"/v1/cluster/status?timeout_ms=abc", "/v1/cluster/status?timeout_ms=-5",
                          "/v1/cluster/analyze?timeout_ms=99999999", "/?refresh_ms=1x",
                          "/v1/stacks?max_frames=0", "/v1/flight_recorder?entries=0"}) {
    auto r = http_get(port, bad);
    ASSERT_TRUE(r) << bad;
    EXPECT_EQ(r->status, 400) << bad;
  }
  httplib::Client cli("127.0.0.1", port);
  auto wrong_method = cli.Post("/v1/status", "{}", "application/json");
  ASSERT_TRUE(wrong_method);
  EXPECT_GE(wrong_method->status, 400);
  EXPECT_LT(wrong_method->status, 500);
  auto big_body = cli.Post("/v1/dump", std::string(1 << 20, 'x'), "text/plain");
  EXPECT_TRUE(!big_body || big_body->status == 413) << (big_body ? big_body->status : 0);
  EXPECT_FALSE(c.store().check({"dump_request"}));

  // Huge header: rejected (or the connection closed), the server keeps serving.
  auto huge = cli.Get("/healthz", {{"X-Huge", std::string(200 * 1024, 'h')}});
  EXPECT_TRUE(!huge || (huge->status >= 400 && huge->status < 500));

  // Slow clients: more idle connections than pool threads, each sending half a request.
  std::vector<int> slow;
  for (int i = 0; i < 6; ++i) {
    slow.push_back(raw_connect(port));
    const char* partial = "GET /v1/status HTTP/1.1\r\nHost: x\r\n";
    ASSERT_GT(write(slow.back(), partial, strlen(partial)), 0);
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto h = http_get(port, "/healthz", 10);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_LT(waited, scaled(5.0)) << "slow clients must be cut off by the read timeout";
  // The slow connections are closed by the server (read returns 0 or an error, not a hang).
  for (int fd : slow) {
    timeval tv{3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b[256];
    ssize_t n;
    while ((n = read(fd, b, sizeof b)) > 0) {
    }
    // 0: the server closed it; an error other than our 3 s receive timeout (EAGAIN): reset.
    const int err = n < 0 ? errno : 0;
    EXPECT_TRUE(n == 0 || (err != EAGAIN && err != EWOULDBLOCK))
        << "a slow connection is still open 3 s after the server's read timeout: "
        << std::strerror(err);
    close(fd);
  }
}

// A rank's store entry that points at another rank's server (a stale or planted address) must
// not count as that rank: its dump names a different rank (issue 17).
TEST(DebugServer, ClusterViewRejectsADumpOfAnotherRank) {
  TestCluster c(4);
  c.run_collectives(2);
  c.store().set("debug_server/3", c.store().get_string("debug_server/1"));
  auto r = http_get(c.port(0), "/v1/cluster/analyze");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  Json a = Json::parse(r->body);
  // collie.analyze.v2: the ranks of each state as ranges; ranks in no state are ok.
  EXPECT_EQ(testing::analysis_state(a, 3), "unreachable") << a.dump(2);
  EXPECT_NE(a.dump().find("served the dump of rank 1"), std::string::npos) << a.dump(2);
  EXPECT_EQ(testing::analysis_state(a, 1), "ok") << a.dump(2);
}

TEST(DebugServer, ClusterAnalyzeNamesTheRankThatDidNotJoin) {
  TestCluster c(4);
  c.run_collectives(5);
  c.hang_next(2);
  // Ops only just started: with the default stall threshold (10 s) that is normal skew.
  auto young = http_get(c.port(0), "/v1/cluster/analyze");
  ASSERT_TRUE(young);
  ASSERT_EQ(young->status, 200) << young->body;
  Json y = Json::parse(young->body);
  EXPECT_TRUE(y["findings"].empty()) << y.dump(2);
  EXPECT_EQ(y["summary"], "all 4 ranks in step") << y.dump(2);

  auto r = http_get(c.port(0), "/v1/cluster/analyze?stall_ms=0");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  Json a = Json::parse(r->body);
  EXPECT_TRUE(a["live"]);
  EXPECT_EQ(testing::analysis_state(a, 2), "straggler") << a.dump(2);
  for (int rk : {0, 1, 3}) EXPECT_EQ(testing::analysis_state(a, rk), "stalled") << a.dump(2);
  EXPECT_EQ(a["culprits"], "2") << a.dump(2);
  ASSERT_GE(a["findings"].size(), 1u);
  EXPECT_EQ(a["findings"][0]["kind"], "NOT_ALL_JOINED") << a.dump(2);
  EXPECT_EQ(a["findings"][0]["message"].get<std::string>().rfind(
                "Not all ranks joining collective, sequence number: 6\n  ranks 0, 1, 3 "
                "(all_reduce) joined",
                0),
            0u)
      << a.dump(2);
  EXPECT_NE(a["findings"][0]["message"].get<std::string>().find(
                "[2] finished collective #5, but didn't join collective #6"),
            std::string::npos)
      << a.dump(2);
}

TEST(DebugServer, FanOutMarksKilledAndHungRanksWithinTimeout) {
  TestCluster c(4);
  c.run_collectives(2);
  c.rank(3).server->stop();  // killed: connection refused
  // Rank 2 "hangs": a listener that accepts connections but never answers.
  const int hung = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(hung, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(hung, 16), 0);
  socklen_t len = sizeof a;
  getsockname(hung, reinterpret_cast<sockaddr*>(&a), &len);
  c.store().set("debug_server/2", fmt::format("http://127.0.0.1:{}", ntohs(a.sin_port)));

  const auto t0 = std::chrono::steady_clock::now();
  auto r = http_get(c.port(0), "/v1/cluster/status?timeout_ms=700");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  close(hung);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_LT(took, scaled(1.5)) << "fan-out must return within its per-rank timeout (+ margin)";
  Json j = Json::parse(r->body);
  EXPECT_TRUE(j["ranks"][0]["reachable"]);
  EXPECT_TRUE(j["ranks"][1]["reachable"]);
  EXPECT_FALSE(j["ranks"][2]["reachable"]);
  EXPECT_FALSE(j["ranks"][3]["reachable"]);
  EXPECT_EQ(j["ranks"][2]["state"], "unreachable");
  EXPECT_EQ(j["ranks"][3]["state"], "unreachable");
  EXPECT_EQ(j["ranks"][1]["status"]["groups"][0]["last_completed_seq"], 2);
  ASSERT_EQ(j["analysis"]["unreachable"].size(), 2u) << j["analysis"].dump(2);
  // One entry per reason (a killed rank and a hung one give two), in no particular order.
  std::set<std::string> unreachable;
  for (const auto& u : j["analysis"]["unreachable"]) unreachable.insert(u["ranks"]);
  EXPECT_EQ(unreachable, (std::set<std::string>{"2", "3"})) << j["analysis"].dump(2);
  EXPECT_EQ(j["analysis"]["culprits"], "2-3");
}

}  // namespace
}  // namespace collie
