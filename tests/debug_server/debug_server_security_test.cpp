// The debug server against hostile clients (issue 17), with real servers and raw sockets:
// DNS rebinding (Host), cross-site form posts, slow and many clients, and a cluster fan-out that
// must only contact the job's registered members (never sending the token elsewhere).
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/error.h"
#include "debug_server/cluster.h"
#include "debug_server/http_request.h"
#include "debug_server/test_cluster.h"
#include "store/socket_util.h"
#include "store/tcp_store.h"
#include "support/time_scale.h"

namespace collie {
namespace {

using namespace std::chrono_literals;
using testing::TestCluster;
using Json = nlohmann::json;
using Steady = std::chrono::steady_clock;
using testing::scaled;

int raw_connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

// Reads until EOF (or `within`); returns the whole response text.
std::string read_all(int fd, std::chrono::milliseconds within = 5000ms) {
  timeval tv{0, 100000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  char buf[4096];
  const auto deadline = Steady::now() + within;
  while (Steady::now() < deadline) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      break;
    }
  }
  return out;
}

struct Reply {
  int status = 0;
  std::string body;
};

// One raw request (exactly the bytes given); status 0 when nothing came back.
Reply raw_request(int port, const std::string& request) {
  const int fd = raw_connect(port);
  EXPECT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  const std::string text = read_all(fd);
  close(fd);
  Reply r;
  if (text.rfind("HTTP/1.1 ", 0) == 0) r.status = std::atoi(text.c_str() + 9);
  const size_t body = text.find("\r\n\r\n");
  if (body != std::string::npos) r.body = text.substr(body + 4);
  return r;
}

Reply get(int port, const std::string& path, const std::string& host) {
  return raw_request(port, fmt::format("GET {} HTTP/1.1\r\nHost: {}\r\n\r\n", path, host));
}

TEST(DebugServerSecurity, ForeignHostNamesAreRefused) {
  DebugServerOptions o;
  o.allowed_hosts = {"collie-alias.internal"};
  TestCluster c(1, o);
  const int port = c.port(0);
  const std::string p = std::to_string(port);
  for (const std::string& host :
       std::vector<std::string>{"127.0.0.1:" + p, "localhost:" + p, "LOCALHOST", "[::1]:" + p,
                                "10.1.2.3:" + p, "collie-alias.internal:" + p}) {
    EXPECT_EQ(get(port, "/v1/config", host).status, 200) << host;
  }
  for (const std::string& host :
       std::vector<std::string>{"evil.example:" + p, "evil.example", "127.0.0.1.evil.example",
                                "localhost.evil.example:" + p, "collie-alias.internal.evil"}) {
    const Reply r = get(port, "/v1/config", host);
    EXPECT_EQ(r.status, 421) << host;
    EXPECT_NE(r.body.find("DNS rebinding"), std::string::npos) << r.body;
  }
}

TEST(DebugServerSecurity, CrossSiteFormPostCannotTriggerADump) {
  TestCluster c(1);
  const int port = c.port(0);
  // Exactly what a browser sends for <form method=post action=http://127.0.0.1:PORT/v1/dump>.
  const std::string form = fmt::format(
      "POST /v1/dump HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nOrigin: http://evil.example\r\n"
      "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 8\r\n\r\nreason=x",
      port);
  const Reply r = raw_request(port, form);
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_NE(r.body.find("X-Collie-Request: 1"), std::string::npos) << r.body;
  EXPECT_FALSE(c.store().check({"dump_request"}));
  // text/plain forms too.
  const Reply t =
      raw_request(port, fmt::format("POST /v1/dump?reason=y HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n"
                                    "Content-Type: text/plain\r\nContent-Length: 0\r\n\r\n",
                                    port));
  EXPECT_EQ(t.status, 403);
  EXPECT_FALSE(c.store().check({"dump_request"}));
  // curl / tools send the header.
  const Reply ok =
      raw_request(port, fmt::format("POST /v1/dump?reason=cli HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n"
                                    "X-Collie-Request: 1\r\nContent-Length: 0\r\n\r\n",
                                    port));
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(c.store().get_string("dump_request"), "1");
}

TEST(DebugServerSecurity, TokenAlsoAuthorizesStateChanges) {
  DebugServerOptions o;
  o.token = "t0ken";
  TestCluster c(1, o);
  const int port = c.port(0);
  const Reply ok =
      raw_request(port, fmt::format("POST /v1/dump HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n"
                                    "Authorization: Bearer t0ken\r\nContent-Length: 0\r\n\r\n",
                                    port));
  EXPECT_EQ(ok.status, 200) << ok.body;
  const Reply no = raw_request(port, fmt::format("POST /v1/dump HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n"
                                                 "X-Collie-Request: 1\r\nContent-Length: 0\r\n\r\n",
                                                 port));
  EXPECT_EQ(no.status, 401);  // with a token configured the header alone is not enough
}

// The finding: four clients sending one header line a second starved the server
// (/healthz timed out, the cluster view called a healthy rank UNREACHABLE).
TEST(DebugServerSecurity, FourSlowClientsDoNotStarveHealthzOrTheClusterView) {
  DebugServerOptions o;
  o.io_timeout = 3s;
  TestCluster c(2, o);
  c.run_collectives(3);
  const int victim = c.port(1);
  std::atomic<bool> stop{false};
  std::atomic<int> cut{0};
  std::vector<std::thread> slow;
  for (int i = 0; i < 4; ++i) {
    slow.emplace_back([&, i] {
      const int fd = raw_connect(victim);
      std::string line = fmt::format("GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n");
      for (int k = 0; !stop.load() && k < 8; ++k) {
        if (send(fd, line.data(), line.size(), MSG_NOSIGNAL) <= 0) {
          cut.fetch_add(1);
          break;
        }
        line = fmt::format("X-Slow-{}-{}: 1\r\n", i, k);
        std::this_thread::sleep_for(1s);
      }
      close(fd);
    });
  }
  std::this_thread::sleep_for(300ms);
  double worst = 0;
  for (int i = 0; i < 8; ++i) {
    const auto t0 = Steady::now();
    auto h = testing::http_get(victim, "/healthz", 5);
    worst = std::max(worst, std::chrono::duration<double>(Steady::now() - t0).count());
    ASSERT_TRUE(h) << "healthz failed while slow clients trickle";
    EXPECT_EQ(h->status, 200);
    std::this_thread::sleep_for(250ms);
  }
  auto view = testing::http_get(c.port(0), "/v1/cluster/status?timeout_ms=1500", 10);
  ASSERT_TRUE(view);
  ASSERT_EQ(view->status, 200) << view->body;
  const Json j = Json::parse(view->body);
  EXPECT_TRUE(j["ranks"][1]["reachable"].get<bool>()) << j["ranks"][1].dump();
  for (auto& t : slow) t.join();
  std::printf("healthz worst latency under 4 slow clients: %.3f s; slow clients cut: %d\n", worst,
              cut.load());
  EXPECT_LT(worst, scaled(1.0));
  EXPECT_EQ(cut.load(), 4) << "the 3 s request deadline must cut every trickling client";
}

TEST(DebugServerSecurity, ManyIdleConnectionsDoNotLockOutNewRequests) {
  TestCluster c(1);
  const int port = c.port(0);
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) idle.push_back(raw_connect(port));  // beyond max_connections
  const auto t0 = Steady::now();
  auto h = testing::http_get(port, "/healthz", 5);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_LT(Steady::now() - t0, scaled(2s));
  for (int fd : idle) close(fd);
}

TEST(DebugServerSecurity, MemberUrlsAreExactlyHttpHostPort) {
  for (const char* ok : {"http://127.0.0.1:8080", "http://node-07.cluster:1", "http://[::1]:65535",
                         "http://h_1:29500"}) {
    std::string why;
    EXPECT_TRUE(is_member_url(ok, &why)) << ok << ": " << why;
  }
  for (const char* bad :
       {"https://127.0.0.1:1", "http://127.0.0.1", "http://127.0.0.1:0", "http://127.0.0.1:65536",
        "http://evil:1/steal?", "http://user@evil:1", "http://evil:1#x", "http://evil:1?q",
        "http://:80", "http://-x:80", "http://a b:80", "ftp://x:1", "http://[::1]", ""}) {
    std::string why;
    EXPECT_FALSE(is_member_url(bad, &why)) << bad;
    EXPECT_FALSE(why.empty());
  }
}

// A planted debug_server/<r> that is not a debug server address is never contacted, so the
// token never reaches it; with the job's secret-protected TcpStore an outsider cannot plant one.
TEST(DebugServerSecurity, FanOutNeverSendsTheTokenToAPlantedAddress) {
  uint16_t trap_port = 0;
  const int trap = net::listen_on("127.0.0.1", 0, &trap_port);
  DebugServerOptions o;
  o.token = "do-not-leak";
  TestCluster c(2, o);
  c.store().set("debug_server/1", fmt::format("http://127.0.0.1:{}/steal?to=", trap_port));
  auto view = [&] {
    httplib::Client cli("127.0.0.1", c.port(0));
    cli.set_read_timeout(10, 0);
    return cli.Get("/v1/cluster/status?timeout_ms=1000",
                   httplib::Headers{{"Authorization", "Bearer do-not-leak"}});
  }();
  ASSERT_TRUE(view);
  ASSERT_EQ(view->status, 200) << view->body;
  const Json j = Json::parse(view->body);
  EXPECT_FALSE(j["ranks"][1]["reachable"].get<bool>());
  EXPECT_NE(j["ranks"][1]["error"].get<std::string>().find("not contacted"), std::string::npos)
      << j["ranks"][1].dump();
  // Nobody connected to the trap.
  const int got = accept4(trap, nullptr, nullptr, SOCK_NONBLOCK);
  EXPECT_LT(got, 0) << "the fan-out connected to a planted address";
  if (got >= 0) close(got);
  close(trap);

  // The real store: an outsider without the job's secret cannot plant the key at all.
  TcpStoreOptions so;
  so.is_server = true;
  so.timeout = 5s;
  so.secret = "job-secret";
  TcpStore job(so);
  TcpStoreOptions outsider;
  outsider.port = job.port();
  outsider.timeout = 5s;
  outsider.secret = "";
  auto plant = [&] {
    TcpStore s(outsider);
    s.set("debug_server/1", "http://127.0.0.1:1");
  };
  EXPECT_THROW(plant(), StoreError);
  EXPECT_FALSE(job.check({"debug_server/1"}));
}

TEST(HttpRequestParser, RejectsWhatItCannotServe) {
  struct Case {
    const char* head;
    int status;
  };
  for (const Case& k : std::vector<Case>{
           {"GET / HTTP/1.1\r\nHost: x", 0},
           {"GET /a%20b?x=1&y=%41+z HTTP/1.0", 0},
           {"GET / HTTP/2.0", 505},
           {"GET http://evil/ HTTP/1.1", 400},
           {"GET  / HTTP/1.1", 400},
           {"G(T / HTTP/1.1", 400},
           {"GET /%zz HTTP/1.1", 400},
           {"GET /%00 HTTP/1.1", 400},
           {"GET / HTTP/1.1\r\n folded: x", 400},
           {"GET / HTTP/1.1\r\nNoColon", 400},
           {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked", 501},
           {"POST / HTTP/1.1\r\nContent-Length: -1", 400},
           {"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6", 400},
           {"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999", 400},
           {"POST / HTTP/1.1\r\nContent-Length: 70000", 413},
       }) {
    http::Request r;
    EXPECT_EQ(http::parse_head(k.head, 65536, &r).status, k.status) << k.head;
  }
  http::Request r;
  ASSERT_EQ(
      http::parse_head("GET /a%20b?x=1&y=%41+z HTTP/1.1\r\nX-A:  v \r\nHost: h", 10, &r).status, 0);
  EXPECT_EQ(r.path, "/a b");
  EXPECT_EQ(r.get_param_value("y"), "A z");
  EXPECT_EQ(r.get_header_value("x-a"), "v");
  EXPECT_EQ(r.get_header_value("HOST"), "h");
  std::string many = "GET / HTTP/1.1";
  for (int i = 0; i < 200; ++i) many += fmt::format("\r\nH{}: x", i);
  EXPECT_EQ(http::parse_head(many, 10, &r).status, 431);
}

}  // namespace
}  // namespace collie
