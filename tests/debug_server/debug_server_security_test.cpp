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
#include <functional>
#include <mutex>
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

// What a planted address can be: a listener that reads the fan-out's request (kept for the test)
// and answers it with `serve`, which writes to the socket until a write fails (the fan-out
// closed its end) or `serve` returns; it records how many bytes went out and when the peer
// was gone.
class Trap {
 public:
  // serve(fd, request head) returns the bytes it managed to send.
  explicit Trap(std::function<size_t(int, const std::string&)> serve) : serve_(std::move(serve)) {
    listen_fd_ = net::listen_on("127.0.0.1", 0, &port_);
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        const int fd = accept4(listen_fd_, nullptr, nullptr, 0);
        if (fd < 0) {
          std::this_thread::sleep_for(5ms);
          continue;
        }
        timeval tv{0, 200000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        std::string head;
        char c;
        while (head.find("\r\n\r\n") == std::string::npos && read(fd, &c, 1) == 1) head += c;
        {
          std::lock_guard<std::mutex> lk(mu_);
          requests_ += head;
        }
        const size_t n = serve_(fd, head);
        sent_ += n;
        gone_at_ = Steady::now();
        close(fd);
      }
    });
  }
  ~Trap() {
    stop_ = true;
    thread_.join();
    close(listen_fd_);
  }
  std::string url() const { return fmt::format("http://127.0.0.1:{}", port_); }
  std::string requests() {
    std::lock_guard<std::mutex> lk(mu_);
    return requests_;
  }
  size_t sent() const { return sent_.load(); }
  Steady::time_point gone_at() const { return gone_at_.load(); }

  // Sends `prefix`, then `unit` over and over (every `pause`) until a send fails or `limit`
  // bytes went out; returns the bytes sent.
  static size_t flood(int fd, const std::string& prefix, const std::string& unit,
                      std::chrono::milliseconds pause, size_t limit) {
    size_t total = 0;
    auto put = [&](const std::string& s) {
      const ssize_t n = send(fd, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      total += static_cast<size_t>(n);
      return true;
    };
    if (!put(prefix)) return total;
    const auto end = Steady::now() + 20s;
    while (total < limit && Steady::now() < end && put(unit)) {
      if (pause.count() > 0) std::this_thread::sleep_for(pause);
    }
    return total;
  }

 private:
  std::function<size_t(int, const std::string&)> serve_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string requests_;
  std::atomic<size_t> sent_{0};
  std::atomic<Steady::time_point> gone_at_{Steady::time_point{}};
};

// Issue 27: with a store anyone can write (no COLLIE_STORE_SECRET, as env:// jobs had), a
// planted but well-formed address got the caller's bearer token from rank 0's fan-out.
TEST(DebugServerSecurity, TheTokenGoesOnlyToAddressesFromAMembersOnlyStore) {
  Trap trap([](int fd, const std::string&) {
    return Trap::flood(fd, "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n", "", 0ms, 0);
  });
  TcpStoreOptions so;
  so.is_server = true;
  so.timeout = 5s;
  so.secret = "";
  auto open_store = std::make_shared<TcpStore>(so);
  ASSERT_FALSE(open_store->members_only());
  DebugServerOptions o;
  o.token = "do-not-leak";
  TestCluster c(2, o, open_store);
  c.store().set("debug_server/1", trap.url());  // what anyone on the host could do
  const auto view = fetch_cluster(c.store(), 2, 1000ms, "do-not-leak", nullptr);
  EXPECT_EQ(trap.requests().find("do-not-leak"), std::string::npos)
      << "the token went to a planted address: " << trap.requests();
  EXPECT_NE(trap.requests().find("GET /v1/status"), std::string::npos) << trap.requests();
  EXPECT_NE(view.ranks[1].error.find("bearer token was not sent"), std::string::npos)
      << view.ranks[1].error;
  EXPECT_NE(view.ranks[1].error.find("COLLIE_STORE_SECRET"), std::string::npos);
  // Rank 0's own address is in the same store: with no token it is refused too (401), and says
  // why rather than leaking the token to find out.
  EXPECT_FALSE(view.ranks[0].reachable);

  // The same job with a secret-protected store: the members get their token.
  so.secret = "job-secret";
  auto locked = std::make_shared<TcpStore>(so);
  TestCluster d(2, o, locked);
  const auto ok = fetch_cluster(d.store(), 2, 2000ms, "do-not-leak", nullptr);
  EXPECT_TRUE(ok.ranks[0].reachable) << ok.ranks[0].error;
  EXPECT_TRUE(ok.ranks[1].reachable) << ok.ranks[1].error;
}

// A planted address that answers with an endless body, an endless head, or a trickle: the
// fan-out reads at most its caps, gives up at its deadline, and stops reading (closes) as soon
// as the request it served has ended (rank 0 read 16 MB -> 3.9 GB in 12 s from one request).
TEST(DebugServerSecurity, AHostileRankCannotMakeTheFanOutReadWithoutBound) {
  const std::string ok_head = "HTTP/1.1 200 OK\r\n\r\n";
  struct Case {
    const char* what;
    std::function<size_t(int, const std::string&)> serve;
  };
  const std::string chunk(64 << 10, 'x');
  const std::vector<Case> cases = {
      {"endless body",
       [&](int fd, const std::string&) {
         return Trap::flood(fd, ok_head, chunk, 0ms, size_t{8} << 30);
       }},
      {"endless body with a Content-Length",
       [&](int fd, const std::string&) {
         return Trap::flood(fd, "HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n", chunk,
                            0ms, size_t{8} << 30);
       }},
      {"endless head",
       [&](int fd, const std::string&) {
         return Trap::flood(fd, "HTTP/1.1 200 OK\r\n", "X-Pad: yyyyyyyyyyyyyyyyyyyy\r\n", 0ms,
                            size_t{8} << 30);
       }},
      {"trickle",
       [&](int fd, const std::string&) {
         return Trap::flood(fd, ok_head, "{", 20ms, size_t{8} << 30);
       }},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    Trap trap(k.serve);
    TestCluster c(2);
    c.store().set("debug_server/1", trap.url());
    const auto t0 = Steady::now();
    const auto view = fetch_cluster(c.store(), 2, 1000ms, "", nullptr);
    const auto returned = Steady::now();
    EXPECT_LT(returned - t0, 3s);
    EXPECT_FALSE(view.ranks[1].reachable);
    EXPECT_TRUE(view.ranks[0].reachable) << view.ranks[0].error;
    // The trap's writes fail once the fan-out closed; the fan-out never reads past its caps
    // (the rest is what socket buffers hold).
    for (int i = 0; i < 100 && trap.gone_at() == Steady::time_point{}; ++i) {
      std::this_thread::sleep_for(20ms);
    }
    ASSERT_NE(trap.gone_at(), Steady::time_point{}) << "still reading 2 s after the request ended";
    EXPECT_LT(trap.gone_at() - returned, 1s);
    EXPECT_LT(trap.sent(), size_t{48} << 20) << view.ranks[1].error;
    std::printf("%s: %s; %zu bytes sent; closed %lld ms after the request ended\n", k.what,
                view.ranks[1].error.c_str(), trap.sent(),
                static_cast<long long>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(trap.gone_at() - returned)
                        .count()));
  }
}

// The fan-out's client reads a status line, header fields and a Content-Length; anything it
// cannot bound or frame is an error naming why.
// A rank whose /v1/status nests 200000 deep (within the 1 MiB cap) and whose dump is valid: the
// status is refused by depth, so it never reaches the cluster view's JSON writer, which
// recurses.
TEST(DebugServerSecurity, ADeeplyNestedStatusIsRefused) {
  testing::TestRank other(1, 2);
  const std::string dump = other.fr.dump_json(1, "test", 16);
  Trap trap([&](int fd, const std::string& head) {
    const std::string body = head.find("/v1/status") != std::string::npos
                                 ? std::string(200000, '[') + std::string(200000, ']')
                                 : dump;
    return Trap::flood(
        fd, fmt::format("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{}", body.size(), body), "",
        0ms, 0);
  });
  TestCluster c(2);
  c.store().set("debug_server/1", trap.url());
  auto res = testing::http_get(c.port(0), "/v1/cluster/status?timeout_ms=2000");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const Json j = Json::parse(res->body);
  EXPECT_FALSE(j["ranks"][1]["reachable"].get<bool>()) << j["ranks"][1].dump();
  EXPECT_NE(j["ranks"][1]["error"].get<std::string>().find("nested deeper than 32"),
            std::string::npos)
      << j["ranks"][1].dump();
}

// Ranks serving on IPv6 loopback publish http://[::1]:PORT and the fan-out reaches them (the
// request's Host brackets the address, or the server would read the port into it).
TEST(DebugServerSecurity, TheFanOutReachesRanksOnIpv6) {
  DebugServerOptions o;
  o.bind_host = "::1";
  TestCluster c(2, o);
  const auto view = fetch_cluster(c.store(), 2, 2000ms, "", nullptr);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(view.ranks[r].url.rfind("http://[::1]:", 0), 0u) << view.ranks[r].url;
    EXPECT_TRUE(view.ranks[r].reachable) << view.ranks[r].error;
  }
}

TEST(HttpResponseParser, ReadsOnlyWhatItCanBound) {
  struct Case {
    const char* head;
    bool ok;
  };
  for (const Case& k : std::vector<Case>{
           {"HTTP/1.1 200 OK\r\nContent-Length: 2", true},
           {"HTTP/1.0 404 Not Found", true},
           {"HTTP/1.1 200", true},
           {"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer", true},
           {"HTTP/2 200 OK", false},
           {"HTTP/1.1 20 OK", false},
           {"HTTP/1.1 2000 OK", false},
           {"HTTP/1.1 100 Continue", false},
           {"ICY 200 OK", false},
           {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked", false},
           {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6", false},
           {"HTTP/1.1 200 OK\r\nContent-Length: 70000", false},
           {"HTTP/1.1 200 OK\r\nContent-Length: -1", false},
           {"HTTP/1.1 200 OK\r\n folded", false},
       }) {
    http::Reply r;
    EXPECT_EQ(http::parse_response_head(k.head, 65536, &r).status == 0, k.ok) << k.head;
  }
  http::Reply r;
  ASSERT_EQ(http::parse_response_head("HTTP/1.1 503 Busy\r\nContent-Length: 7", 10, &r).status, 0);
  EXPECT_EQ(r.status, 503);
  EXPECT_TRUE(r.has_length);
  EXPECT_EQ(r.content_length, 7u);
  std::string many = "HTTP/1.1 200 OK";
  for (int i = 0; i < 200; ++i) many += fmt::format("\r\nH{}: x", i);
  EXPECT_NE(http::parse_response_head(many, 10, &r).status, 0);
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
