#include "backends/gloo/gloo_connect.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gloo/transport/tcp/address.h>
#include <netinet/in.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "backends/gloo/gloo_errors.h"
#include "comm/rendezvous.h"
#include "core/error.h"
#include "core/fd_limit.h"
#include "core/thread_name.h"
#include "store/store.h"

namespace collie {
namespace {

// What rank r tells every other rank once (gather kAll): its hosts's address family and IP (every
// pair of a rank listens on the device's address) and its host name (libgloo's local rank).
struct HostInfo {
  sockaddr_storage ss{};  // the IP; the port is per pair
  std::string host;
};

Bytes encode_host(const sockaddr_storage& ss, const std::string& host) {
  // family (4 or 6) | IP (4 or 16 bytes) [| IPv6 scope id, 4 bytes little endian] | host name
  uint8_t head[21] = {};
  size_t n = 0;
  if (ss.ss_family == AF_INET) {
    head[0] = 4;
    std::memcpy(head + 1, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, 4);
    n = 5;
  } else {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    head[0] = 6;
    std::memcpy(head + 1, &a->sin6_addr, 16);
    for (int i = 0; i < 4; ++i) head[17 + i] = static_cast<uint8_t>(a->sin6_scope_id >> (8 * i));
    n = 21;
  }
  Bytes b(n + host.size());
  std::memcpy(b.data(), head, n);
  std::memcpy(b.data() + n, host.data(), host.size());
  return b;
}

HostInfo decode_host(const Bytes& b, int rank) {
  HostInfo h;
  if (!b.empty() && b[0] == 4 && b.size() >= 5) {
    auto* a = reinterpret_cast<sockaddr_in*>(&h.ss);
    a->sin_family = AF_INET;
    std::memcpy(&a->sin_addr, &b[1], 4);
    h.host.assign(b.begin() + 5, b.end());
    return h;
  }
  if (!b.empty() && b[0] == 6 && b.size() >= 21) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&h.ss);
    a->sin6_family = AF_INET6;
    std::memcpy(&a->sin6_addr, &b[1], 16);
    uint32_t scope = 0;
    for (int i = 0; i < 4; ++i) scope |= static_cast<uint32_t>(b[17 + i]) << (8 * i);
    a->sin6_scope_id = scope;
    h.host.assign(b.begin() + 21, b.end());
    return h;
  }
  throw NetworkError(fmt::format("gloo: rank {} published an address collie cannot read", rank));
}

std::string host_str(const sockaddr_storage& ss, uint16_t port) {
  char ip[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, ip, sizeof(ip));
    return fmt::format("{}:{}", ip, port);
  }
  inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, ip, sizeof(ip));
  return fmt::format("[{}]:{}", ip, port);
}

uint16_t port_of(const sockaddr_storage& ss) {
  return ntohs(ss.ss_family == AF_INET ? reinterpret_cast<const sockaddr_in*>(&ss)->sin_port
                                       : reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
}

std::string label(const GroupInfo& i) { return fmt::format("group {} '{}'", i.name, i.desc); }

// The connect's state, shared by the caller and the helper thread that runs it.
struct State {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  std::vector<int> missing;   // ranks that never published (a gather timed out)
  std::atomic<int> peer{-1};  // the pair being connected
  std::string peer_address;   // where that peer listens for this rank; guarded by mu
};

// A gloo context whose full mesh is connected from two gathers, one request each per rank,
// instead of libgloo's connectFullMesh (it has every rank read every other rank's N-1 pair
// addresses, 136 N^3 bytes out of the store in all, and read the lower ranks' host names one
// request at a time). Every pair of libgloo's TCP transport listens on a port of its own, so
// rank j needs from rank i exactly one port: the one i's pair for j opened. Rank i contributes
// its ports as N cells to a column gather and reads its own column: N ports in one reply.
class MeshContext : public gloo::rendezvous::Context {
 public:
  using gloo::rendezvous::Context::Context;

  void connect(Store& store, const std::shared_ptr<gloo::transport::Device>& dev, State& st,
               Millis timeout) {
    auto tc = dev->createContext(rank, size);
    tc->setTimeout(getTimeout());
    sockaddr_storage self{};
    Bytes ports(static_cast<size_t>(size) * 2, 0);
    for (int i = 0; i < size; ++i) {
      if (i == rank) continue;
      auto& pair = tc->createPair(i);
      const gloo::transport::tcp::Address a(pair->address().bytes());
      self = a.getSockaddr();
      const uint16_t port = port_of(self);
      ports[2 * static_cast<size_t>(i)] = static_cast<uint8_t>(port >> 8);
      ports[2 * static_cast<size_t>(i) + 1] = static_cast<uint8_t>(port & 0xff);
    }
    if (size > 1) {
      char name[256] = {};
      gethostname(name, sizeof(name) - 1);
      auto hosts = store.gather("gloo_connect/hosts", rank, size, encode_host(self, name),
                                Store::GatherRead::kAll, timeout);
      if (!hosts.complete) return fail_missing(st, hosts.missing);
      auto mine = store.gather("gloo_connect/ports", rank, size, ports, Store::GatherRead::kColumn,
                               timeout);
      if (!mine.complete) return fail_missing(st, mine.missing);
      std::vector<HostInfo> peers;
      peers.reserve(static_cast<size_t>(size));
      int local_rank = 0;
      for (int i = 0; i < size; ++i) {
        peers.push_back(decode_host(hosts.values[static_cast<size_t>(i)], i));
        if (i < rank && peers.back().host == name) ++local_rank;
      }
      for (int i = 0; i < size; ++i) {
        if (i == rank) continue;
        const Bytes& cell = mine.values[static_cast<size_t>(i)];
        const uint16_t port = static_cast<uint16_t>(cell[0] << 8 | cell[1]);
        sockaddr_storage ss = peers[static_cast<size_t>(i)].ss;
        if (ss.ss_family == AF_INET) {
          reinterpret_cast<sockaddr_in*>(&ss)->sin_port = htons(port);
        } else {
          reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = htons(port);
        }
        {
          std::lock_guard<std::mutex> lk(st.mu);
          st.peer_address = host_str(ss, port);
        }
        st.peer.store(i);
        auto& pair = tc->getPair(i);
        pair->setLocalRank(local_rank);
        const gloo::transport::tcp::Address peer(
            reinterpret_cast<const sockaddr*>(&ss),
            ss.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
        pair->connect(peer.bytes());
      }
    }
    device_ = dev;
    transportContext_ = std::move(tc);
  }

 private:
  static void fail_missing(State& st, const std::vector<int>& missing) {
    std::lock_guard<std::mutex> lk(st.mu);
    st.missing = missing;
  }
};

}  // namespace

std::shared_ptr<gloo::rendezvous::Context> connect_full_mesh_bounded(
    const GroupInfo& i, const std::shared_ptr<gloo::transport::Device>& device,
    const std::string& address, const std::string& reason) {
  // libgloo's TCP transport holds one socket per peer (and, while connecting, a listening one).
  require_fds(2 * static_cast<uint64_t>(i.size),
              fmt::format("[Rank {}] gloo's full mesh of {} ({} ranks)", i.rank, label(i), i.size));
  auto ctx = std::make_shared<MeshContext>(i.rank, i.size);
  ctx->setTimeout(i.timeout);
  auto st = std::make_shared<State>();
  // The helper owns what it touches (a clone of the store shares its connection), so it may be
  // left behind at the deadline.
  std::thread([st, ctx, store = i.store->clone(), dev = device, timeout = i.timeout]() mutable {
    name_this_thread("collie-connect");
    std::exception_ptr err;
    try {
      ctx->connect(*store, dev, *st, timeout);
    } catch (...) {
      err = std::current_exception();
    }
    std::lock_guard<std::mutex> lk(st->mu);
    st->error = err;
    st->done = true;
    st->cv.notify_all();
  }).detach();

  // The gathers give up at the group timeout and say who never came; the caller waits a little
  // longer, so that it hears them rather than its own deadline.
  const Millis grace = std::min<Millis>(i.timeout / 4 + Millis(500), Millis(5000));
  std::unique_lock<std::mutex> lk(st->mu);
  const bool finished = st->cv.wait_for(lk, i.timeout + grace, [&] { return st->done; });
  if (!st->missing.empty()) {
    throw TimeoutError(fmt::format(
        "[Rank {}] gloo: connecting {} ({} ranks) did not finish within {} ms: rank{} {} never "
        "connected; this rank bound {} ({})",
        i.rank, label(i), i.size, i.timeout.count(), st->missing.size() == 1 ? "" : "s",
        format_ranks(st->missing), address, reason));
  }
  if (finished) {
    if (!st->error) return ctx;
    try {
      std::rethrow_exception(st->error);
    } catch (const Error&) {
      throw;  // the store's own errors already name what failed
    } catch (const std::exception& e) {
      const int peer = st->peer.load();
      const std::string msg = fmt::format(
          "[Rank {}] gloo: connecting {} ({} ranks) over {} ({}) failed{}: {}; check that every "
          "rank started and that this address is reachable from the others (set "
          "GLOO_SOCKET_IFNAME or COLLIE_GLOO_HOST)",
          i.rank, label(i), i.size, address, reason,
          peer >= 0 ? fmt::format(" at rank {} ({})", peer, st->peer_address) : "", e.what());
      if (looks_like_gloo_timeout(e.what())) throw TimeoutError(msg);
      throw NetworkError(msg);
    }
  }
  const int peer = st->peer.load();
  throw TimeoutError(fmt::format(
      "[Rank {}] gloo: connecting {} ({} ranks) did not finish within {} ms: {}; this rank bound "
      "{} ({})",
      i.rank, label(i), i.size, i.timeout.count(),
      peer >= 0 ? fmt::format("every rank published its address, but the connection to rank {} "
                              "(listening on {}) did not complete",
                              peer, st->peer_address)
                : std::string("the connections did not complete"),
      address, reason));
}

}  // namespace collie
