// TcpStore beyond the conformance suite: many concurrent clients, a server process that dies,
// oversize messages, connect retry while the server is not up yet.
#include "store/tcp_store.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <thread>

#include "core/error.h"
#include "store/socket_util.h"
#include "store/tcp_store_protocol.h"
#include "support/thread_probe.h"
#include "support/time_scale.h"

namespace collie {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

TcpStoreOptions server_opts(Millis timeout = 30s) {
  TcpStoreOptions o;
  o.is_server = true;
  o.timeout = timeout;
  return o;
}

TcpStoreOptions client_of(const TcpStore& server, Millis timeout = 30s) {
  TcpStoreOptions o;
  o.port = server.port();
  o.timeout = timeout;
  return o;
}

uint16_t free_port() {
  uint16_t port = 0;
  int fd = net::listen_on("127.0.0.1", 0, &port);
  close(fd);
  return port;
}

TEST(TcpStore, FiveHundredTwelveConcurrentClients) {
  constexpr int kClients = 512;
  // Client and server ends of every connection live in this process: 2 fds per client.
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  if (lim.rlim_cur < 4 * kClients) {
    lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, 4 * kClients);
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  TcpStore server(server_opts());
  std::atomic<int> ok{0};
  std::vector<std::thread> ts;
  ts.reserve(kClients);
  for (int i = 0; i < kClients; ++i) {
    ts.emplace_back([&, i] {
      try {
        TcpStore c(client_of(server));
        if (c.add("arrived", 1) == kClients) c.set("all_in", "yes");
        c.set("client/" + std::to_string(i), std::to_string(i));
        // Parks on the server until the last client arrives.
        if (c.get_string("all_in") == "yes") ok.fetch_add(1);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "client " << i << ": " << e.what();
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok.load(), kClients);
  EXPECT_EQ(server.add("arrived", 0), kClients);
  EXPECT_EQ(server.num_keys(), kClients + 2);
}

TEST(TcpStore, ClientRetriesUntilTheServerStarts) {
  const uint16_t port = free_port();
  auto client = std::async(std::launch::async, [port] {
    TcpStoreOptions o;
    o.port = port;
    o.timeout = 10s;
    TcpStore c(o);
    return c.get_string("hello");
  });
  std::this_thread::sleep_for(300ms);
  TcpStoreOptions so = server_opts();
  so.port = port;
  TcpStore server(so);
  server.set("hello", "world");
  EXPECT_EQ(client.get(), "world");
}

TEST(TcpStore, ConnectTimeoutNamesHostAndPort) {
  const uint16_t port = free_port();
  TcpStoreOptions o;
  o.port = port;
  o.timeout = 300ms;
  const auto start = Steady::now();
  try {
    TcpStore c(o);
    FAIL() << "connected to a port nobody listens on";
  } catch (const NetworkError& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << e.what();
  }
  EXPECT_LT(Steady::now() - start, testing::scaled(3s));
}

// The server runs in a child process; killing it must fail the parked client fast.
TEST(TcpStore, ServerProcessDeathGivesNetworkError) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    try {
      TcpStore server(server_opts());
      const uint16_t port = server.port();
      if (write(fds[1], &port, sizeof(port)) != sizeof(port)) _exit(2);
      std::this_thread::sleep_for(60s);
    } catch (...) {
    }
    _exit(1);
  }
  close(fds[1]);
  uint16_t port = 0;
  ASSERT_EQ(read(fds[0], &port, sizeof(port)), static_cast<ssize_t>(sizeof(port)));
  close(fds[0]);

  TcpStoreOptions o;
  o.port = port;
  o.timeout = 60s;
  TcpStore client(o);
  client.set("k", "v");
  EXPECT_EQ(client.get_string("k"), "v");
  std::atomic<int> parked_tid{-1};
  auto parked = std::async(std::launch::async, [&] {
    parked_tid = testing::current_tid();
    const auto start = Steady::now();
    try {
      client.get("never_set");
      return std::string("get returned");
    } catch (const NetworkError& e) {
      if (Steady::now() - start > 10s) return std::string("took too long");
      return std::string(e.what());
    } catch (const std::exception& e) {
      return std::string("wrong exception: ") + e.what();
    }
  });
  ASSERT_TRUE(testing::settled(parked_tid)) << "the get never parked";
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_EQ(parked.wait_for(15s), std::future_status::ready);
  const std::string msg = parked.get();
  EXPECT_NE(msg.find("closed the connection"), std::string::npos) << msg;
  EXPECT_NE(msg.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << msg;
  EXPECT_NE(msg.find("never_set"), std::string::npos) << msg;
  EXPECT_THROW(client.ping(), NetworkError);
}

TEST(TcpStore, OversizeRequestIsRejectedByTheClient) {
  TcpStoreOptions so = server_opts();
  TcpStore server(so);
  TcpStoreOptions o = client_of(server);
  o.max_message_bytes = 1024;
  TcpStore small(o);
  try {
    small.set("big", Bytes(4096, 7));
    FAIL() << "oversize set was sent";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("max_message_bytes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("big"), std::string::npos) << e.what();
  }
  small.ping();  // the connection is still usable
  EXPECT_FALSE(server.check({"big"}));
}

TEST(TcpStore, OversizeRequestIsRejectedByTheServer) {
  TcpStoreOptions so = server_opts();
  so.max_message_bytes = 1 << 20;
  TcpStore server(so);
  // A client allowed to send more than the server accepts gets the server's reason.
  TcpStore big(client_of(server));
  try {
    big.set("huge", Bytes(2 << 20, 1));
    FAIL() << "server accepted an oversize request";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds"), std::string::npos) << e.what();
  }
  // A raw peer claiming a 1 GiB frame: answered with an error, nothing allocated, server alive.
  const int fd = net::connect_with_retry("127.0.0.1", server.port(), 5s);
  const uint8_t hdr[4] = {0, 0, 0, 0x40};
  ASSERT_EQ(send(fd, hdr, sizeof(hdr), MSG_NOSIGNAL), 4);
  uint8_t reply[4];
  net::recv_all(fd, reply, 4, Steady::now() + 5s, "test");
  Bytes body(store_wire::decode_u32(reply));
  net::recv_all(fd, body.data(), body.size(), Steady::now() + 5s, "test");
  store_wire::Reader r(body.data(), body.size());
  EXPECT_EQ(r.u8(), static_cast<uint8_t>(store_wire::Status::kError));
  EXPECT_NE(r.str().find("1073741824 bytes"), std::string::npos);
  close(fd);
  TcpStore after(client_of(server));
  after.set("still", "alive");
  EXPECT_EQ(server.get_string("still"), "alive");
}

TEST(TcpStoreProtocol, TruncatedFieldsThrowInsteadOfAllocating) {
  store_wire::Writer w;
  w.u8(1).str("key").bytes(Bytes(10, 3));
  const Bytes& frame = w.finish();
  EXPECT_EQ(store_wire::decode_u32(frame.data()), frame.size() - store_wire::kHeaderBytes);
  store_wire::Reader ok(frame.data() + 4, frame.size() - 4);
  EXPECT_EQ(ok.u8(), 1);
  EXPECT_EQ(ok.str(), "key");
  EXPECT_EQ(ok.bytes(), Bytes(10, 3));
  EXPECT_TRUE(ok.done());
  // A length field claiming 4 GiB inside a 9-byte payload.
  const uint8_t bad[] = {1, 0xff, 0xff, 0xff, 0xff, 'k', 'e', 'y', 0};
  store_wire::Reader r(bad, sizeof(bad));
  r.u8();
  EXPECT_THROW(r.str(), StoreError);
}

TEST(TcpStore, UnknownOpIsAnsweredWithAnErrorAndTheServerKeepsServing) {
  TcpStore server(server_opts());
  const int fd = net::connect_with_retry("127.0.0.1", server.port(), 5s);
  const uint8_t frame[] = {1, 0, 0, 0, 200};  // a 1-byte request with op 200
  ASSERT_EQ(send(fd, frame, sizeof(frame), MSG_NOSIGNAL), 5);
  uint8_t hdr[4];
  net::recv_all(fd, hdr, 4, Steady::now() + 5s, "test");
  Bytes body(store_wire::decode_u32(hdr));
  net::recv_all(fd, body.data(), body.size(), Steady::now() + 5s, "test");
  store_wire::Reader r(body.data(), body.size());
  EXPECT_EQ(r.u8(), static_cast<uint8_t>(store_wire::Status::kError));
  EXPECT_NE(r.str().find("unknown store request op 200"), std::string::npos);
  close(fd);
  server.set("after", "1");
  EXPECT_EQ(TcpStore(client_of(server)).get_string("after"), "1");
}

TEST(TcpStore, ManyParkedWaitersWakeOnOneSet) {
  TcpStore server(server_opts());
  std::vector<std::future<std::string>> waiters;
  std::atomic<int> tids[16];
  // Set the moment wait() returns: the get() after it would park again on "b" and hide an early
  // wake from settled() and from the future.
  std::atomic<bool> woke[16];
  for (int i = 0; i < 16; ++i) {
    tids[i] = -1;
    woke[i] = false;
    waiters.push_back(std::async(std::launch::async, [&, i] {
      tids[i] = testing::current_tid();
      TcpStore c(client_of(server));
      c.wait({"a", "b"});
      woke[i] = true;
      return c.get_string("b");
    }));
  }
  for (auto& t : tids) ASSERT_TRUE(testing::settled(t)) << "a waiter never parked";
  server.set("a", "1");
  // Half the keys: every waiter stays parked in its wait (settled again, and wait() has not
  // returned; a woken one would have flagged it before parking in its get).
  for (int i = 0; i < 16; ++i) {
    EXPECT_TRUE(testing::settled(tids[i])) << "waiter " << i << " never parked again";
    EXPECT_FALSE(woke[i]) << "waiter " << i << " woke on half its keys";
  }
  server.set("b", "2");
  for (auto& w : waiters) EXPECT_EQ(w.get(), "2");
  for (auto& w : woke) EXPECT_TRUE(w);
}

}  // namespace
}  // namespace collie
