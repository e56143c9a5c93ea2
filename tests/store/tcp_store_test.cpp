// TcpStore beyond the conformance suite: many concurrent clients, a server process that dies,
// oversize messages, connect retry while the server is not up yet.
#include "store/tcp_store.h"

#include <fmt/format.h>
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
#include <functional>
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
// A store server in a child process (so the test can kill it, or starve it of descriptors):
// `before` runs in the child first. Returns the child's pid and the server's port (0 on failure).
std::pair<pid_t, uint16_t> fork_server(const std::function<void()>& before = {}) {
  int fds[2];
  if (pipe(fds) != 0) return {-1, 0};
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    if (before) before();
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
  if (child < 0 || read(fds[0], &port, sizeof(port)) != static_cast<ssize_t>(sizeof(port)))
    port = 0;
  close(fds[0]);
  return {child, port};
}

TEST(TcpStore, ServerProcessDeathGivesNetworkError) {
  const auto [child, port] = fork_server();
  ASSERT_NE(port, 0);

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
  r.u32();  // request id
  EXPECT_EQ(r.u8(), static_cast<uint8_t>(store_wire::Status::kError));
  EXPECT_NE(std::string(body.begin() + 5, body.end()).find("1073741824 bytes"), std::string::npos);
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
  // A 5-byte request: op 200, request id 7.
  const uint8_t frame[] = {5, 0, 0, 0, 200, 7, 0, 0, 0};
  ASSERT_EQ(send(fd, frame, sizeof(frame), MSG_NOSIGNAL), 9);
  uint8_t hdr[4];
  net::recv_all(fd, hdr, 4, Steady::now() + 5s, "test");
  Bytes body(store_wire::decode_u32(hdr));
  net::recv_all(fd, body.data(), body.size(), Steady::now() + 5s, "test");
  store_wire::Reader r(body.data(), body.size());
  EXPECT_EQ(r.u32(), 7u);  // the reply names the request it answers
  EXPECT_EQ(r.u8(), static_cast<uint8_t>(store_wire::Status::kError));
  EXPECT_NE(std::string(body.begin() + 5, body.end()).find("unknown store request op 200"),
            std::string::npos);
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

// Every thread of a rank shares one connection: the store host holds one descriptor per rank,
// however many clones (dump watcher, DETAIL, the caller) a rank makes.
TEST(TcpStore, AStoreAndItsClonesShareOneConnection) {
  TcpStore server(server_opts());
  ASSERT_EQ(server.server()->stats().connections, 1u);  // the server's own client
  TcpStore client(client_of(server));
  std::vector<std::shared_ptr<Store>> clones;
  for (int i = 0; i < 5; ++i) clones.push_back(client.clone());
  for (auto& c : clones) c->set("k", "v");
  EXPECT_EQ(server.server()->stats().connections, 2u);
  // Their requests interleave on it: a get parked on one clone, sets through the others.
  auto waiter = std::async(std::launch::async, [&] { return clones[0]->get_string("later"); });
  for (int i = 1; i < 5; ++i) clones[i]->set(fmt::format("x{}", i), "y");
  clones[4]->set("later", "ok");
  EXPECT_EQ(waiter.get(), "ok");
}

// An interrupted wait is cancelled on the server too: nothing stays parked for a client that
// left, however long its timeout.
TEST(TcpStore, AnInterruptedWaitIsDroppedByTheServer) {
  TcpStore server(server_opts());
  TcpStore client(client_of(server));
  auto c = client.clone();
  std::atomic<int> tid{-1};
  auto waiter = std::async(std::launch::async, [&] {
    tid = testing::current_tid();
    try {
      c->wait({"never"}, 60s);
    } catch (const StoreError&) {
    }
  });
  ASSERT_TRUE(testing::settled(tid));
  EXPECT_EQ(server.server()->stats().parked, 1u);
  c->interrupt();
  waiter.get();
  client.ping();  // the cancel went out before this request, on the same connection
  EXPECT_EQ(server.server()->stats().parked, 0u);
  client.set("never", "1");  // and waking the key reaches no one
}

// What a parked wait costs the server is O(keys) once and O(1) per key that arrives: N
// waiters on the same N keys cost about 2 N^2 key-wait steps in all (a request re-filed on every
// set would cost N^3 / 2).
TEST(TcpStore, ParkedWaitsCostLinearInTheirKeys) {
  constexpr int kN = 48;
  TcpStore server(server_opts());
  std::vector<std::string> keys;
  for (int i = 0; i < kN; ++i) keys.push_back(fmt::format("k{}", i));
  std::vector<std::future<void>> waiters;
  for (int i = 0; i < kN; ++i) {
    waiters.push_back(std::async(std::launch::async, [&] {
      TcpStore c(client_of(server));
      c.wait(keys);
    }));
  }
  while (server.server()->stats().parked < static_cast<uint64_t>(kN)) {
    std::this_thread::sleep_for(1ms);
  }
  const uint64_t before = server.server()->stats().wait_steps;
  EXPECT_EQ(before, static_cast<uint64_t>(kN) * kN);  // each waiter registered on every key
  for (const auto& k : keys) server.set(k, "1");
  for (auto& w : waiters) w.get();
  const uint64_t steps = server.server()->stats().wait_steps - before;
  EXPECT_LE(steps, 2u * kN * kN) << "waking " << kN << " waiters on " << kN << " keys took "
                                 << steps << " steps";
}

// Out of descriptors, the server answers the clients it cannot keep with one line naming the
// open-files limit, at once, instead of leaving them to time out (and it never spins).
TEST(TcpStore, OutOfDescriptorsTheServerSaysSoInsteadOfHanging) {
  const auto [child, port] = fork_server([] {
    rlimit lim{64, 64};
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0) _exit(3);
  });
  ASSERT_NE(port, 0);
  std::vector<std::unique_ptr<TcpStore>> clients;
  std::string refused;
  const auto t0 = Steady::now();
  for (int i = 0; i < 100 && refused.empty(); ++i) {
    TcpStoreOptions o;
    o.port = port;
    o.timeout = 20s;
    try {
      clients.push_back(std::make_unique<TcpStore>(o));
    } catch (const StoreError& e) {
      refused = e.what();
    }
  }
  const auto took = Steady::now() - t0;
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_NE(refused.find("out of file descriptors"), std::string::npos) << refused;
  EXPECT_NE(refused.find("ulimit -n"), std::string::npos) << refused;
  EXPECT_GT(clients.size(), 40u);  // it served what the limit allowed
  EXPECT_LT(took, testing::scaled(10s)) << "a refused client waited for its timeout";
}

}  // namespace
}  // namespace collie
