// RecordMesh with ranks as threads over loopback and a HashStore: records arrive intact and in
// order, a rank that never comes or leaves is named, strangers are turned away at connect.
#include "debug/record_mesh.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <sstream>
#include <thread>

#include "comm/rendezvous.h"
#include "core/error.h"
#include "store/hash_store.h"
#include "store/store.h"

namespace collie {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kRecord = 24;

// Runs fn(rank, mesh) on n threads after connecting them; returns each rank's error ("" = none).
std::vector<std::string> run_mesh(int n, Millis timeout,
                                  const std::function<void(int, RecordMesh&)>& fn,
                                  std::shared_ptr<Store> store = nullptr,
                                  const std::function<void(int)>& before_connect = nullptr) {
  if (!store) store = std::make_shared<HashStore>(timeout);
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r) {
    ts.emplace_back([&, r] {
      try {
        if (before_connect) before_connect(r);
        auto mesh = RecordMesh::connect(store, "mesh_test", r, n, kRecord, "127.0.0.1", timeout);
        fn(r, *mesh);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : ts) t.join();
  return errors;
}

// The record rank `from` sends rank `to` in exchange `k`: every byte depends on all three.
uint8_t byte_of(int from, int to, int k, size_t i) {
  return static_cast<uint8_t>(from * 31 + to * 7 + k * 13 + static_cast<int>(i));
}

TEST(RecordMesh, EveryRecordArrivesAtItsDestinationInOrder) {
  for (int n : {2, 3, 5}) {
    auto errs = run_mesh(n, Millis(10000), [n](int me, RecordMesh& m) {
      std::vector<uint8_t> out(static_cast<size_t>(n) * kRecord), in(out.size(), 0xEE);
      for (int k = 0; k < 200; ++k) {
        for (int to = 0; to < n; ++to) {
          for (size_t i = 0; i < kRecord; ++i) out[to * kRecord + i] = byte_of(me, to, k, i);
        }
        m.exchange(out.data(), in.data(), Millis(10000));
        for (int from = 0; from < n; ++from) {
          for (size_t i = 0; i < kRecord; ++i) {
            const uint8_t want =
                from == me ? (k == 0 ? 0xEE : in[from * kRecord + i]) : byte_of(from, me, k, i);
            ASSERT_EQ(in[from * kRecord + i], want) << "n=" << n << " from " << from << " k=" << k;
          }
        }
      }
    });
    for (int r = 0; r < n; ++r) EXPECT_EQ(errs[r], "") << "n=" << n << " rank " << r;
  }
}

TEST(RecordMesh, ARankThatDoesNotComeIsNamedAtTheDeadlineAndTheMeshIsThenBroken) {
  auto store = std::make_shared<HashStore>(Millis(10000));
  std::vector<std::string> timeouts(3);
  std::vector<int> waited_ms(3, 0);
  auto errs = run_mesh(
      3, Millis(10000),
      [&](int me, RecordMesh& m) {
        std::vector<uint8_t> out(3 * kRecord, 1), in(3 * kRecord);
        m.exchange(out.data(), in.data(), Millis(10000));  // all three once
        if (me != 2) {
          const auto start = Clock::now();
          try {
            m.exchange(out.data(), in.data(), Millis(300));  // rank 2 stays away
          } catch (const TimeoutError& e) {
            timeouts[me] = e.what();
          }
          waited_ms[me] =
              static_cast<int>(std::chrono::duration_cast<Millis>(Clock::now() - start).count());
          EXPECT_TRUE(m.broken());
          EXPECT_THROW(m.exchange(out.data(), in.data(), Millis(300)), BackendError);
        }
        store_barrier(*store, "done", me, 3, Millis(10000));
      },
      store);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(errs[r], "") << "rank " << r;
  for (int r : {0, 1}) {
    EXPECT_NE(timeouts[r].find("got no record from rank(s) 2 within 300 ms"), std::string::npos)
        << "rank " << r << ": " << timeouts[r];
    EXPECT_GE(waited_ms[r], 290);
    EXPECT_LT(waited_ms[r], 3000);
  }
}

TEST(RecordMesh, APeerThatLeavesIsNamed) {
  auto errs = run_mesh(2, Millis(10000), [](int me, RecordMesh& m) {
    std::vector<uint8_t> out(2 * kRecord, 1), in(2 * kRecord);
    m.exchange(out.data(), in.data(), Millis(10000));
    if (me == 1) {
      m.close();
      return;
    }
    EXPECT_THROW(
        {
          try {
            m.exchange(out.data(), in.data(), Millis(10000));
          } catch (const NetworkError& e) {
            EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
            throw;
          }
        },
        NetworkError);
  });
  EXPECT_EQ(errs[0], "");
  EXPECT_EQ(errs[1], "");
}

TEST(RecordMesh, AStrangerWithoutTheTokenIsTurnedAway) {
  // Rank 0 listens first; a stranger reads its published address (but not its token, which it
  // guesses) and connects before rank 1 does: rank 0 reads its hello and closes the connection.
  // The mesh still forms between 0 and 1 only.
  auto store = std::make_shared<HashStore>(Millis(10000));
  std::thread stranger([&] {
    store->wait({"mesh_test/0"}, Millis(10000));
    std::istringstream in(to_string(store->get("mesh_test/0")));
    std::string host, token;
    int port = 0;
    in >> host >> port >> token;
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    std::string hello = "CLRM";
    hello += std::string("\x01\x00\x00\x00", 4) + std::string(64, 'a');  // claims rank 1
    ASSERT_EQ(::send(fd, hello.data(), hello.size(), 0), static_cast<ssize_t>(hello.size()));
    char c;
    EXPECT_EQ(::recv(fd, &c, 1, 0), 0) << std::strerror(errno);  // rank 0 closes it
    ::close(fd);
    store->set("stranger_done", to_bytes("1"));
  });
  auto errs = run_mesh(
      2, Millis(10000),
      [&](int me, RecordMesh& m) {
        std::vector<uint8_t> out(2 * kRecord, static_cast<uint8_t>(10 + me)), in(2 * kRecord);
        m.exchange(out.data(), in.data(), Millis(10000));
        EXPECT_EQ(in[(1 - me) * kRecord], 10 + (1 - me));
      },
      store,
      [&](int r) {
        if (r == 1) store->wait({"stranger_done"}, Millis(10000));
      });
  stranger.join();
  EXPECT_EQ(errs[0], "");
  EXPECT_EQ(errs[1], "");
}

TEST(RecordMesh, ARankThatNeverConnectsIsNamedAtConnect) {
  auto store = std::make_shared<HashStore>(Millis(10000));
  std::string err;
  try {
    RecordMesh::connect(store, "mesh_test", 0, 2, kRecord, "127.0.0.1", Millis(300));
  } catch (const TimeoutError& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("heard nothing from rank(s) 1 within 300 ms"), std::string::npos) << err;
}

}  // namespace
}  // namespace collie
