#pragma once
// StoreEngine: what the TcpStore server does with a request, without the sockets: the data (a
// HashStore), the parked GET / WAIT / MULTI_GET requests, the gathers, and their deadlines. The
// server's event loop (tcp_store_server.cpp) owns the connections and feeds it decoded requests;
// the engine answers through a ReplySink.
//
// Costs (what lets one server serve 100,000 ranks): a request parked on K keys is registered
// once on the keys still missing, O(K); each key that arrives costs O(1) per request waiting on
// it (a count of missing keys goes down; nothing is re-filed); a request leaving early (timeout,
// cancel, closed connection) unlinks in O(K). A gather costs O(1) per contribution beyond its
// payload; its values are joined into one reply body once, when the last member arrives, and
// sent only to the members that read them; the members a timed-out gather still misses are
// encoded once per state of the gather, however many members time out. The memory of parked
// requests and gathers counts against the server's caps (parked_bytes, stored_bytes).
//
// Thread safety: none; the event loop's thread alone calls it (stored_bytes and stats may be read
// from any thread).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "store/hash_store.h"
#include "store/tcp_store_protocol.h"
#include "store/tcp_store_server.h"

namespace collie::store_server {

using SteadyClock = std::chrono::steady_clock;

// Where the engine's answers go (the event loop). send queues one reply frame `id | status |
// body` on connection `conn` (a connection that is gone is ignored); reject answers `msg` to
// request `id` and cuts the connection off (a client that broke a limit).
class ReplySink {
 public:
  virtual ~ReplySink() = default;
  virtual void send(uint64_t conn, uint32_t id, store_wire::Status status,
                    std::span<const uint8_t> body) = 0;
  virtual void reject(uint64_t conn, uint32_t id, std::string_view msg) = 0;
};

class StoreEngine {
 public:
  StoreEngine(const TcpStoreLimits& limits, ReplySink& sink);
  ~StoreEngine();
  StoreEngine(const StoreEngine&) = delete;
  StoreEngine& operator=(const StoreEngine&) = delete;

  // One request of connection `conn` (authenticated), the reader positioned after op and id.
  // Replies now or parks. Throws StoreError / InvalidArgument for a malformed or refused request
  // (the loop answers it as an error).
  void handle(uint64_t conn, uint32_t id, store_wire::Op op, store_wire::Reader& r);
  // CANCEL: the client no longer waits for its request `id`; a parked one is dropped unanswered.
  void cancel(uint64_t conn, uint32_t id);
  // The connection closed: its parked requests are dropped (a gather keeps its contribution).
  void drop(uint64_t conn);
  // Answers every parked request whose deadline is at or before `now` with its timeout.
  void expire(SteadyClock::time_point now);
  std::optional<SteadyClock::time_point> next_deadline() const;

  size_t parked(uint64_t conn) const;        // parked requests of conn
  size_t parked_bytes(uint64_t conn) const;  // their memory, as the connection cap counts it
  // Keys + values + gathers, as max_store_bytes counts them. Thread-safe.
  size_t stored_bytes() const { return data_.stored_bytes() + gather_bytes_.load(); }
  // Requests parked now, and the key-wait registrations made, notified or unlinked since start
  // (the work parked waits cost: O(K) per request on K keys, whatever N). Thread-safe.
  uint64_t parked_now() const { return parked_now_.load(std::memory_order_acquire); }
  uint64_t wait_steps() const { return wait_steps_.load(std::memory_order_relaxed); }

 private:
  // Memory a parked request holds beyond its keys' text (the record, its links, its deadline).
  static constexpr size_t kParkedOverhead = 160;
  using ParkedId = uint64_t;
  // One registration of a parked request on a missing key: the request and which of its keys.
  struct KeyWait {
    ParkedId pid;
    uint32_t index;
  };
  using WaitList = std::list<KeyWait>;
  struct Parked {
    ParkedId pid = 0;
    uint64_t conn = 0;
    uint32_t id = 0;
    store_wire::Op op = store_wire::Op::kWait;
    std::vector<std::string> keys;  // GET / WAIT / MULTI_GET
    // Per key of `keys`: its registration in key_waits_ while the key is missing.
    struct Link {
      WaitList* list = nullptr;
      WaitList::iterator it;
    };
    std::vector<Link> links;
    size_t missing = 0;
    std::string gather;   // a gather's name ("" for key waits)
    uint32_t member = 0;  // a gather's: which member waits
    SteadyClock::time_point start, deadline;
    size_t bytes = 0;
  };

  struct Gather {
    uint32_t members = 0;
    uint8_t read = 0;
    std::vector<Bytes> values;  // by member, until done
    std::vector<uint8_t> have;  // by member, until done
    uint32_t arrived = 0;
    size_t cell = SIZE_MAX;  // kColumn: bytes per cell, fixed by the first value
    bool done = false;
    // Members parked until done; a request that left early stays listed (skipped when done).
    std::vector<ParkedId> waiting;
    size_t bytes = 0;  // counted in gather_bytes_
    // The "missing members" body, built for `missing_at` arrivals (reused while none arrives).
    uint32_t missing_at = UINT32_MAX;
    Bytes missing;
  };

  void set_like(uint64_t conn, uint32_t id, store_wire::Op op, store_wire::Reader& r);
  void wait_or_reply(uint64_t conn, uint32_t id, store_wire::Op op, std::vector<std::string> keys,
                     int64_t timeout_ms);
  void reply_ready(uint64_t conn, uint32_t id, store_wire::Op op,
                   const std::vector<std::string>& keys);
  void on_gather(uint64_t conn, uint32_t id, store_wire::Reader& r);
  // The last member arrived: answers every waiting member, then keeps only a tombstone.
  void complete_gather(const std::string& name, Gather& g, uint32_t last_member, uint64_t conn,
                       uint32_t id);
  const Bytes& missing_body(Gather& g);
  bool delete_gather(const std::string& name);

  Parked& park(uint64_t conn, uint32_t id, store_wire::Op op, int64_t timeout_ms);
  void publish_parked();  // parked_now() = the requests parked now
  // Registers p on every key of p.keys missing now; returns how many are missing.
  size_t link_missing(Parked& p);
  void unlink(Parked& p);
  void unpark(ParkedId pid);
  void notify(const std::string& key);
  void ready(ParkedId pid);

  bool fits(uint64_t conn, uint32_t id, store_wire::Op op, const std::string& key,
            size_t value_bytes, size_t after);
  size_t size_after(const std::vector<std::pair<std::string_view, size_t>>& writes);

  TcpStoreLimits lim_;
  ReplySink& sink_;
  HashStore data_;
  std::atomic<size_t> gather_bytes_{0};
  std::atomic<uint64_t> parked_now_{0}, wait_steps_{0};
  ParkedId next_pid_ = 1;
  std::unordered_map<ParkedId, std::unique_ptr<Parked>> parked_;
  // Per connection: its parked requests by request id, and their bytes.
  struct ConnParked {
    std::unordered_map<uint32_t, ParkedId> by_id;
    size_t bytes = 0;
  };
  std::unordered_map<uint64_t, ConnParked> conn_parked_;
  std::unordered_map<std::string, WaitList> key_waits_;
  std::unordered_map<std::string, std::unique_ptr<Gather>> gathers_;
  std::set<std::pair<SteadyClock::time_point, ParkedId>> deadlines_;
};

}  // namespace collie::store_server
