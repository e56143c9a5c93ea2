// TcpStore against hostile local clients (issue 17): authentication with the per-job secret,
// and the server's memory caps and timeouts, exercised with the real server and raw sockets.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "core/error.h"
#include "store/hash_store.h"
#include "store/socket_util.h"
#include "store/store_secret.h"
#include "store/tcp_store.h"
#include "store/tcp_store_protocol.h"

namespace collie {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;
using store_wire::Op;
using store_wire::Status;
using store_wire::Writer;

TcpStoreOptions server_with(const std::string& secret) {
  TcpStoreOptions o;
  o.is_server = true;
  o.timeout = 10s;
  o.secret = secret;
  return o;
}

TcpStoreOptions client_of(const TcpStore& server, const std::string& secret) {
  TcpStoreOptions o;
  o.port = server.port();
  o.timeout = 10s;
  o.secret = secret;
  return o;
}

size_t rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6)) * 1024;
  }
  return 0;
}

// The highest RSS seen while it lives (sampled every millisecond).
class PeakRss {
 public:
  PeakRss() : base_(rss_bytes()), peak_(base_) {
    t_ = std::thread([this] {
      while (!stop_.load()) {
        peak_ = std::max(peak_.load(), rss_bytes());
        std::this_thread::sleep_for(1ms);
      }
    });
  }
  ~PeakRss() { finish(); }
  // Peak growth over the RSS at construction, in bytes.
  size_t finish() {
    if (t_.joinable()) {
      stop_ = true;
      t_.join();
    }
    return peak_ > base_ ? peak_ - base_ : 0;
  }

 private:
  size_t base_;
  std::atomic<size_t> peak_;
  std::atomic<bool> stop_{false};
  std::thread t_;
};

// Under ASan (its quarantine keeps freed buffers mapped) and TSan (shadow memory is several times
// the memory touched) RSS does not measure what the server holds.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kRssIsMeaningful = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kRssIsMeaningful = false;
#else
constexpr bool kRssIsMeaningful = true;
#endif
#else
constexpr bool kRssIsMeaningful = true;
#endif

double mib(size_t b) { return static_cast<double>(b) / (1 << 20); }

// A raw protocol peer: frames by hand, no TcpStore client logic.
class Raw {
 public:
  explicit Raw(uint16_t port) {
    fd_ = net::connect_with_retry("127.0.0.1", port, 5s);
    timeval tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  ~Raw() { close(fd_); }
  int fd() const { return fd_; }

  bool send_frame(Writer& w) {
    const Bytes& f = w.finish();
    return send_bytes(f.data(), f.size());
  }
  bool send_bytes(const uint8_t* p, size_t n) {
    while (n > 0) {
      const ssize_t k = send(fd_, p, n, MSG_NOSIGNAL);
      if (k <= 0) return false;
      p += k;
      n -= static_cast<size_t>(k);
    }
    return true;
  }
  // Sends PING requests (without reading a reply) until `limit` bytes went out or the server
  // cut the connection; returns the count. Each is answered, so replies pile up unread.
  size_t stream(size_t limit) {
    const uint8_t ping[] = {5, 0, 0, 0, static_cast<uint8_t>(Op::kPing), 9, 0, 0, 0};
    std::vector<uint8_t> chunk;
    while (chunk.size() + sizeof(ping) <= 64 * 1024) chunk.insert(chunk.end(), ping, ping + 9);
    // Stops within 500 ms of the server no longer reading, well inside the 2 s the server
    // gives a rejected client to read its error (a 5 s send timeout here let the server close
    // first, and the error was lost with the unread stream when the machine was slow).
    timeval quick{0, 500000};
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &quick, sizeof(quick));
    size_t sent = 0;
    while (sent < limit) {
      const ssize_t k = send(fd_, chunk.data(), std::min(chunk.size(), limit - sent), MSG_NOSIGNAL);
      if (k <= 0) break;
      sent += static_cast<size_t>(k);
    }
    timeval tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    return sent;
  }
  // The next reply frame: {status, error text or ""}; status -1 on EOF / reset / timeout.
  std::pair<int, std::string> reply(Millis within = 5000ms) {
    uint8_t hdr[4];
    try {
      net::recv_all(fd_, hdr, 4, Steady::now() + within, "test");
      Bytes body(store_wire::decode_u32(hdr));
      net::recv_all(fd_, body.data(), body.size(), Steady::now() + within, "test");
      store_wire::Reader r(body.data(), body.size());
      r.u32();  // the id of the request it answers
      const int status = r.u8();
      return {status, status == static_cast<int>(Status::kError)
                          ? std::string(body.begin() + 5, body.end())
                          : std::string()};
    } catch (const NetworkError&) {
      return {-1, ""};
    }
  }
  // Reads the next reply frame `chunk` bytes at a time with `pause` after each read (a slow
  // reader): {status, frame length}; status -1 on EOF / reset / timeout.
  std::pair<int, size_t> reply_slowly(size_t chunk, Millis pause) {
    uint8_t hdr[4];
    try {
      net::recv_all(fd_, hdr, 4, Steady::now() + 5000ms, "test");
      Bytes body(store_wire::decode_u32(hdr));
      for (size_t at = 0; at < body.size(); at += chunk) {
        net::recv_all(fd_, body.data() + at, std::min(chunk, body.size() - at),
                      Steady::now() + 5000ms, "test");
        std::this_thread::sleep_for(pause);
      }
      return {body.size() > 4 ? body[4] : -1, body.size()};
    } catch (const NetworkError&) {
      return {-1, 0};
    }
  }
  // The first error reply, skipping the answers to requests that succeeded (stream()'s PINGs);
  // {-1, ""} on EOF / reset / timeout.
  std::pair<int, std::string> error_reply(Millis within = 5000ms) {
    for (;;) {
      auto r = reply(within);
      if (r.first != static_cast<int>(Status::kOk)) return r;
    }
  }
  // True when the server closed the connection (EOF or reset) within `within`.
  bool closed(Millis within = 5000ms) {
    const auto deadline = Steady::now() + within;
    uint8_t buf[4096];
    while (Steady::now() < deadline) {
      timeval tv{0, 100000};
      setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n == 0) return true;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return true;
    }
    return false;
  }

 private:
  int fd_ = -1;
};

Writer auth(const std::string& secret) {
  Writer w;
  w.u8(static_cast<uint8_t>(Op::kAuth)).u32(store_wire::kAuthId).str(secret);
  return w;
}

Writer set_req(const std::string& key, const std::string& value) {
  Writer w;
  w.u8(static_cast<uint8_t>(Op::kSet)).u32(1).str(key).str(value);
  return w;
}

Writer get_req(const std::string& key, int64_t timeout_ms) {
  Writer w;
  w.u8(static_cast<uint8_t>(Op::kGet)).u32(2).str(key).i64(timeout_ms);
  return w;
}

void expect_auth_failure(const TcpStoreOptions& o, const std::string& why) {
  try {
    TcpStore c(o);
    c.set("intruder", "1");
    FAIL() << "a client " << why << " was served";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("store authentication failed"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("COLLIE_STORE_SECRET"), std::string::npos) << e.what();
  }
}

TEST(TcpStoreAuth, OnlyClientsWithTheSecretAreServed) {
  const std::string secret = new_store_secret();
  EXPECT_EQ(secret.size(), 64u);
  EXPECT_NE(secret, new_store_secret());
  TcpStore server(server_with(secret));
  expect_auth_failure(client_of(server, ""), "without a secret");
  expect_auth_failure(client_of(server, secret.substr(0, 63) + "x"), "with a wrong secret");
  expect_auth_failure(client_of(server, secret + "0"), "with a longer secret");
  TcpStore good(client_of(server, secret));
  good.set("k", "v");
  EXPECT_EQ(good.get_string("k"), "v");
  EXPECT_FALSE(server.check({"intruder"}));
  // clone() carries the secret.
  EXPECT_EQ(good.clone()->get_string("k"), "v");
}

TEST(TcpStoreAuth, RawRequestWithoutAuthIsRefusedAndDisconnected) {
  TcpStore server(server_with("job-secret"));
  Raw raw(server.port());
  Writer w = set_req("planted", "http://evil:1");
  ASSERT_TRUE(raw.send_frame(w));
  auto [status, msg] = raw.reply();
  EXPECT_EQ(status, static_cast<int>(Status::kError));
  EXPECT_NE(msg.find("store authentication failed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("SET"), std::string::npos) << msg;
  EXPECT_TRUE(raw.closed());
  EXPECT_FALSE(server.check({"planted"}));
}

TEST(TcpStoreAuth, WrongSecretOverRawSocketIsRefused) {
  TcpStore server(server_with("job-secret"));
  Raw raw(server.port());
  Writer a = auth("guess");
  Writer s = set_req("planted", "x");
  ASSERT_TRUE(raw.send_frame(a));
  raw.send_frame(s);  // pipelined behind the failed AUTH: must not be applied
  auto [status, msg] = raw.reply();
  EXPECT_EQ(status, static_cast<int>(Status::kError));
  EXPECT_NE(msg.find("wrong COLLIE_STORE_SECRET"), std::string::npos) << msg;
  EXPECT_TRUE(raw.closed());
  EXPECT_FALSE(server.check({"planted"}));
}

TEST(TcpStoreAuth, BigFirstFrameIsRefusedBeforeItIsRead) {
  TcpStore server(server_with("job-secret"));
  Raw raw(server.port());
  const uint8_t hdr[4] = {0, 0, 0, 0x03};  // claims a 48 MiB request
  ASSERT_TRUE(raw.send_bytes(hdr, 4));
  auto [status, msg] = raw.reply();
  EXPECT_EQ(status, static_cast<int>(Status::kError));
  EXPECT_NE(msg.find("store authentication failed"), std::string::npos) << msg;
  EXPECT_TRUE(raw.closed());
}

// Whether what a store's keys say was written by the job's members (what the debug server's
// fan-out decides on before it sends its token to the addresses there): the client learns it
// from the server, so a client holding a secret does not vouch for a server that has none.
TEST(TcpStoreAuth, MembersOnlyIsWhatTheServerRequires) {
  TcpStore locked(server_with("s3cret"));
  EXPECT_TRUE(locked.members_only());
  EXPECT_TRUE(TcpStore(client_of(locked, "s3cret")).members_only());
  TcpStore open(server_with(""));
  EXPECT_FALSE(open.members_only());
  EXPECT_FALSE(TcpStore(client_of(open, "")).members_only());
  EXPECT_FALSE(TcpStore(client_of(open, "a-secret-the-server-ignores")).members_only());
  EXPECT_FALSE(open.clone()->members_only());
  EXPECT_TRUE(locked.clone()->members_only());
  EXPECT_TRUE(HashStore().members_only());
}

TEST(TcpStoreAuth, SecretComesFromTheEnvironmentByDefault) {
  ASSERT_EQ(setenv(kStoreSecretEnv, "from-env", 1), 0);
  TcpStoreOptions so;
  so.is_server = true;
  so.timeout = 10s;
  TcpStore server(so);  // reads COLLIE_STORE_SECRET
  TcpStoreOptions co;
  co.port = server.port();
  co.timeout = 10s;
  TcpStore client(co);  // so does the client
  client.set("a", "1");
  unsetenv(kStoreSecretEnv);
  expect_auth_failure(client_of(server, ""), "whose environment has no secret");
  EXPECT_EQ(server.get_string("a"), "1");
}

TEST(TcpStoreAuth, SilentConnectionIsDroppedAfterTheHandshakeTimeout) {
  TcpStoreOptions so = server_with("s");
  so.limits.handshake_timeout = 300ms;
  TcpStore server(so);
  Raw raw(server.port());
  const auto t0 = Steady::now();
  auto [status, msg] = raw.reply(5000ms);
  EXPECT_EQ(status, static_cast<int>(Status::kError));
  EXPECT_NE(msg.find("no authentication within 300 ms"), std::string::npos) << msg;
  EXPECT_TRUE(raw.closed());
  EXPECT_LT(Steady::now() - t0, 4s);
}

TEST(TcpStoreLimits, HalfSentFrameIsCutAfterThePartialFrameTimeout) {
  TcpStoreOptions so = server_with("");
  so.limits.partial_frame_timeout = 300ms;
  TcpStore server(so);
  Raw raw(server.port());
  const uint8_t part[] = {100, 0, 0, 0, 1, 2, 3};  // 100-byte frame, 3 bytes of it
  ASSERT_TRUE(raw.send_bytes(part, sizeof(part)));
  const auto t0 = Steady::now();
  auto [status, msg] = raw.reply(5000ms);
  EXPECT_EQ(status, static_cast<int>(Status::kError));
  EXPECT_NE(msg.find("not completed within 300 ms"), std::string::npos) << msg;
  EXPECT_TRUE(raw.closed());
  EXPECT_LT(Steady::now() - t0, 4s);
  TcpStore ok(client_of(server, ""));
  ok.set("still", "serving");
}

TEST(TcpStoreLimits, IdleTimeoutIsOffByDefaultAndClosesWhenSet) {
  TcpStoreOptions so = server_with("");
  TcpStore server(so);
  TcpStore quiet(client_of(server, ""));
  std::this_thread::sleep_for(600ms);
  quiet.ping();  // default: a quiet client keeps its connection
  so.limits.idle_timeout = 300ms;
  TcpStore strict(so);
  Raw raw(strict.port());
  const auto t0 = Steady::now();
  auto [status, msg] = raw.reply(5000ms);
  EXPECT_EQ(status, static_cast<int>(Status::kError));
  EXPECT_NE(msg.find("idle for 300 ms"), std::string::npos) << msg;
  EXPECT_LT(Steady::now() - t0, 4s);
}

// The finding: streaming while a GET waits grew rank 0 by the amount streamed
// (300 MB -> +333 MB RSS). Now the connection is cut at the per-connection cap.
TEST(TcpStoreLimits, StreamingWhileAGetWaitsIsCutOffAtTheConnectionCap) {
  TcpStore server(server_with(""));  // default limits: 64 MiB frames, cap 65 MiB
  PeakRss peak;
  Raw raw(server.port());
  Writer g = get_req("never", 60000);
  ASSERT_TRUE(raw.send_frame(g));
  const auto t0 = Steady::now();
  const size_t sent = raw.stream(300u << 20);
  const size_t grew = peak.finish();
  auto [status, msg] = raw.error_reply();
  std::printf("streamed %zu MiB before the cut in %.2f s; peak RSS growth %.1f MiB\n", sent >> 20,
              std::chrono::duration<double>(Steady::now() - t0).count(), mib(grew));
  // A client that never reads may not get to see the error before it is closed; it is cut.
  if (status != -1) {
    EXPECT_EQ(status, static_cast<int>(Status::kError));
    EXPECT_NE(msg.find("per-connection cap"), std::string::npos) << msg;
  }
  EXPECT_LT(sent, 200u << 20);  // cut near 65 MiB, not after 300
  if (kRssIsMeaningful) {
    EXPECT_LT(grew, 150u << 20);
  }
  TcpStore ok(client_of(server, ""));
  ok.set("still", "serving");
}

TEST(TcpStoreLimits, SmallCapsBoundTheStreamTightly) {
  TcpStoreOptions so = server_with("");
  so.max_message_bytes = 1 << 20;  // cap 2 MiB
  TcpStore server(so);
  PeakRss peak;
  Raw raw(server.port());
  Writer g = get_req("never", 60000);
  ASSERT_TRUE(raw.send_frame(g));
  const size_t sent = raw.stream(300u << 20);
  const size_t grew = peak.finish();
  std::printf("cap 2 MiB: streamed %zu MiB, peak RSS growth %.1f MiB\n", sent >> 20, mib(grew));
  auto [status, msg] = raw.error_reply();
  EXPECT_NE(msg.find("per-connection cap (2097152)"), std::string::npos) << msg;
  EXPECT_LT(sent, 300u << 20);
  if (kRssIsMeaningful) {
    EXPECT_LT(grew, 32u << 20);
  }
}

// The grace a rejected client gets restarts while it keeps reading what was queued before its
// error: a client on a loaded machine that reads slowly still gets the error, not a reset
// (found under ASan in CI, where reading the answers ahead of the error outlasted the grace).
TEST(TcpStoreLimits, ARejectedClientThatKeepsReadingSlowlyStillGetsItsError) {
  TcpStoreOptions so = server_with("");
  so.max_message_bytes = 1 << 20;  // cap 2 MiB
  TcpStore server(so);
  server.set("big", Bytes(1000 << 10, 7));
  Raw raw(server.port());
  Writer g = get_req("big", 1000);
  ASSERT_TRUE(raw.send_frame(g));  // its answer is begun before the stream; it is kept
  raw.stream(300u << 20);          // cut at the 2 MiB cap
  const auto t0 = Steady::now();
  // 64 KiB per 250 ms: about 4 s for the ~1 MB answer, twice the 2 s grace.
  auto [status, length] = raw.reply_slowly(64 << 10, 250ms);
  const double slow_s = std::chrono::duration<double>(Steady::now() - t0).count();
  ASSERT_EQ(status, static_cast<int>(Status::kOk))
      << "-1: the server closed the connection while the client was still reading, after " << slow_s
      << " s";
  EXPECT_GT(length, 1000u << 10);
  EXPECT_GT(slow_s, 3.0) << "read too fast to outlast the grace; the test proves nothing";
  auto [error, msg] = raw.error_reply();
  std::printf("read the answer slowly for %.1f s, then the error\n", slow_s);
  EXPECT_NE(msg.find("per-connection cap (2097152)"), std::string::npos) << msg;
}

// The grace also restarts while the rejected client still sends the rest of what was refused
// (discarded): it has not begun to read yet. A CI run under ASan cut a streaming client 2 s
// after its rejection, and it saw a reset instead of the error. Here the answer ahead of the
// error cannot be delivered (a small receive buffer), so only the sending shows the client alive.
TEST(TcpStoreLimits, ARejectedClientStillSendingItsRequestGetsItsError) {
  TcpStoreOptions so = server_with("");
  so.max_message_bytes = 1 << 20;  // cap 2 MiB: the discarded rest of a refused request fits
  TcpStore server(so);
  server.set("big", Bytes(1000 << 10, 7));
  Raw raw(server.port());
  const int small = 128 << 10;  // above loopback's 64 KiB segment, so window updates flow
  ASSERT_EQ(setsockopt(raw.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
  Writer g = get_req("big", 1000);
  ASSERT_TRUE(raw.send_frame(g));  // its ~1 MB answer waits in the server's queues, unread
  // A request of 1.5 MiB, above max_message_bytes: refused at its header; its body follows
  // slowly, 64 KiB per 250 ms for 6 s (three times the 2 s grace: the first grace may be
  // restarted by the answer still flowing into the client's buffer), within the discard budget.
  const uint8_t header[4] = {0x00, 0x00, 0x18, 0x00};  // 0x180000, little-endian as the wire
  ASSERT_EQ(store_wire::decode_u32(header), 3u << 19);
  ASSERT_TRUE(raw.send_bytes(header, sizeof(header)));
  const Bytes chunk(64 << 10, 1);
  const auto t0 = Steady::now();
  int sent = 0;
  for (; sent < 24; ++sent) {
    if (!raw.send_bytes(chunk.data(), chunk.size())) break;
    std::this_thread::sleep_for(250ms);
  }
  const double send_s = std::chrono::duration<double>(Steady::now() - t0).count();
  EXPECT_EQ(sent, 24) << "cut off while still sending, after " << send_s << " s";
  EXPECT_GT(send_s, 5.0) << "sent too fast to outlast the grace; the test proves nothing";
  auto [status, length] = raw.reply_slowly(256 << 10, 0ms);
  EXPECT_EQ(status, static_cast<int>(Status::kOk));
  EXPECT_GT(length, 1000u << 10);
  auto [error, msg] = raw.error_reply();
  EXPECT_NE(msg.find("exceeds the store server's max_message_bytes (1048576)"), std::string::npos)
      << msg;
}

// A client that sends GETs of a 512 KiB value and never reads the replies.
TEST(TcpStoreLimits, UnreadRepliesAreBoundedThenTheClientIsCut) {
  TcpStoreOptions so = server_with("");
  so.max_message_bytes = 1 << 20;
  TcpStore server(so);
  server.set("big", Bytes(512 << 10, 7));
  PeakRss peak;
  Raw raw(server.port());
  Writer g = get_req("big", 1000);
  const Bytes frame = g.finish();
  Bytes many;
  for (int i = 0; i < 4096; ++i) many.insert(many.end(), frame.begin(), frame.end());
  size_t sent = 0;
  const auto t0 = Steady::now();
  bool cut = false;
  while (Steady::now() - t0 < 20s) {
    if (!raw.send_bytes(many.data(), many.size())) {
      cut = true;
      break;
    }
    sent += many.size();
  }
  const size_t grew = peak.finish();
  std::printf("unread replies: %zu GETs sent (%zu KiB) before the cut; peak RSS growth %.1f MiB\n",
              sent / frame.size(), sent >> 10, mib(grew));
  EXPECT_TRUE(cut);
  if (kRssIsMeaningful) {
    EXPECT_LT(grew, 32u << 20);
  }
  TcpStore ok(client_of(server, ""));
  EXPECT_EQ(ok.get("big").size(), 512u << 10);
}

TEST(TcpStoreLimits, AppendPastTheMessageLimitIsRefusedAndNothingIsLost) {
  TcpStoreOptions so = server_with("");
  so.max_message_bytes = 1 << 20;
  TcpStore server(so);
  TcpStore c(client_of(server, ""));
  c.append("log", Bytes(600 << 10, 1));
  try {
    c.append("log", Bytes(600 << 10, 2));
    FAIL() << "append past max_message_bytes was accepted";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("APPEND on key 'log' would make its value 1228800 bytes"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(c.ping(), NetworkError);  // disconnected after the error
  EXPECT_EQ(server.get("log"), Bytes(600 << 10, 1));
}

TEST(TcpStoreLimits, OversizeMultiGetReplyIsAnErrorNotAnAllocation) {
  TcpStoreOptions so = server_with("");
  so.max_message_bytes = 1 << 20;
  TcpStore server(so);
  TcpStore c(client_of(server, ""));
  c.set("a", Bytes(600 << 10, 1));
  c.set("b", Bytes(600 << 10, 2));
  try {
    c.multi_get({"a", "b"});
    FAIL() << "a reply above max_message_bytes was built";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("fetch fewer keys"), std::string::npos) << e.what();
  }
  EXPECT_EQ(c.get("a").size(), 600u << 10);  // still connected
}

TEST(TcpStoreLimits, StoreSizeCapRefusesGrowthButNotReplacement) {
  TcpStoreOptions so = server_with("");
  so.limits.max_store_bytes = 1 << 20;
  TcpStore server(so);
  TcpStore c(client_of(server, ""));
  c.set("a", Bytes(600 << 10, 1));
  c.set("a", Bytes(700 << 10, 2));  // replaces: 700 KiB stored
  try {
    c.set("b", Bytes(600 << 10, 3));
    FAIL() << "store grew past max_store_bytes";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("store is full"), std::string::npos) << e.what();
  }
  TcpStore d(client_of(server, ""));
  EXPECT_TRUE(d.delete_key("a"));
  d.set("b", Bytes(600 << 10, 3));  // room again after the delete
  EXPECT_FALSE(d.check({"a"}));
}

// A server whose data may hold 1 MiB, and one client of it.
struct CappedStore {
  static TcpStoreLimits one_mib() {
    TcpStoreLimits l;
    l.max_store_bytes = 1 << 20;
    return l;
  }
  static TcpStoreOptions client_of(uint16_t port) {
    TcpStoreOptions o;
    o.port = port;
    return o;
  }
  TcpStoreLimits limits = one_mib();
  TcpStoreServer server{"127.0.0.1", 0, limits, ""};
  TcpStore client{client_of(server.port())};
};

// Issue 27: a MULTI_SET naming one key twice subtracted the key's old size twice. Shrinking it
// that way wrapped the count below zero and every later write was "store is full".
TEST(TcpStoreLimits, MultiSetOfOneKeyTwiceKeepsTheStoreWritable) {
  CappedStore s;
  TcpStore& c = s.client;
  c.set("k", Bytes(600 << 10, 1));
  c.multi_set({"k", "k"}, {Bytes{}, Bytes(3, 2)});
  EXPECT_EQ(c.get("k"), Bytes(3, 2));  // the last value wins
  c.set("b", Bytes(1 << 10, 3));       // threw "store is full"
  EXPECT_EQ(s.server.stored_bytes(), 1u + 3 + 1 + (1 << 10));
}

// ... and undercounting by the key's old size each time let the store grow past its cap.
TEST(TcpStoreLimits, RepeatedKeysInMultiSetCannotBypassTheSizeCap) {
  CappedStore s;
  TcpStore& c = s.client;
  c.set("pad", Bytes(900 << 10, 1));
  for (int i = 0; i < 3; ++i) {
    c.set("k", Bytes(100 << 10, 2));
    c.multi_set({"k", "k"}, {Bytes{}, Bytes{}});
  }
  EXPECT_THROW(c.set("c", Bytes(250 << 10, 3)), StoreError);  // 1150 KiB would be stored
  EXPECT_LE(s.server.stored_bytes(), s.limits.max_store_bytes);
}

// The count the cap uses is kept by the map's own writes: after any mix of writes it equals the
// keys plus values actually stored.
TEST(HashStoreBytes, FollowTheMapThroughEveryWrite) {
  HashStore h;
  std::map<std::string, size_t> truth;
  auto total = [&] {
    size_t t = 0;
    for (const auto& [k, v] : truth) t += k.size() + v;
    return t;
  };
  uint32_t x = 12345;
  auto next = [&](uint32_t n) {
    x = x * 1103515245 + 12345;
    return (x >> 8) % n;
  };
  for (int i = 0; i < 3000; ++i) {
    const std::string k = "key" + std::to_string(next(7));
    const std::string k2 = "key" + std::to_string(next(7));
    const Bytes v(next(50), 'v');
    switch (next(6)) {
      case 0:
        h.set(k, v);
        truth[k] = v.size();
        break;
      case 1:
        h.append(k, v);
        truth[k] += v.size();
        break;
      case 2:
        h.delete_key(k);
        truth.erase(k);
        break;
      case 3: {
        const Bytes w(next(50), 'w');
        h.multi_set({k, k2, k}, {v, w, w});
        truth[k2] = w.size();
        truth[k] = w.size();
        break;
      }
      case 4: {
        const Bytes cur = truth.count(k) ? h.get(k) : Bytes{};
        h.compare_set(k, cur, v);
        truth[k] = v.size();
        break;
      }
      default:
        h.delete_key(k);
        truth.erase(k);
        h.add(k, static_cast<int64_t>(next(100000)));
        truth[k] = h.get(k).size();
        break;
    }
    ASSERT_EQ(h.stored_bytes(), total()) << "after write " << i;
  }
}

// Found by tests/fuzz/fuzz_store.cpp: ADD overflowing int64 was undefined behaviour on rank 0.
TEST(TcpStoreLimits, AddOverflowIsAnErrorAndTheCounterIsUnchanged) {
  TcpStore server(server_with(""));
  TcpStore c(client_of(server, ""));
  EXPECT_EQ(c.add("n", INT64_MAX), INT64_MAX);
  try {
    c.add("n", 1);
    FAIL() << "ADD overflowed silently";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("overflows a 64-bit counter"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(c.add("n2", INT64_MIN + 1), INT64_MIN + 1);
  EXPECT_THROW(c.add("n2", -2), StoreError);
  EXPECT_EQ(c.get_string("n"), std::to_string(INT64_MAX));  // still connected, value unchanged
  EXPECT_EQ(c.add("n", -1), INT64_MAX - 1);
}

TEST(TcpStoreLimits, TotalBufferCapCutsTheClientThatPassesIt) {
  TcpStoreOptions so = server_with("");
  so.max_message_bytes = 8 << 20;                // per-connection cap 9 MiB
  so.limits.max_total_buffered_bytes = 3 << 20;  // but 3 MiB for all clients together
  TcpStore server(so);
  Raw raw(server.port());
  Writer g = get_req("never", 60000);
  ASSERT_TRUE(raw.send_frame(g));
  const size_t sent = raw.stream(64u << 20);
  auto [status, msg] = raw.error_reply();
  EXPECT_NE(msg.find("above its cap (3145728)"), std::string::npos) << msg;
  EXPECT_LT(sent, 64u << 20);
  TcpStore ok(client_of(server, ""));
  ok.set("still", "serving");
}

}  // namespace
}  // namespace collie
