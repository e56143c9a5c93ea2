#pragma once
// StoreConnection: the one TCP connection a TcpStore and all its clones share. Every request
// carries an id; the server answers each when it can (a parked wait does not hold up the
// requests after it), so several threads have requests in flight on it at once.
//
// Reading: no thread of its own. A caller waiting for its replies becomes the reader when no
// one else reads (it reads frames and hands each to the caller whose id it carries), and hands
// the role on when its own replies are in; the others wait on a condition variable.
// Stopping a caller: interrupt_wake() wakes every waiter (and the reader's poll); a caller whose
// `stop` flag is set gives up at once, and its parked requests are cancelled on the server.
// A lost connection fails every call in flight and every later call with NetworkError; a reply
// that does not come within the call's budget fails that call alone (the stream stays in step).
//
// Ownership: owns the socket, closed when the last TcpStore sharing it goes. Thread-safe.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/timeout.h"
#include "store/store.h"
#include "store/tcp_store_protocol.h"

namespace collie {

class StoreConnection {
 public:
  // Connects (with backoff until `timeout`) and authenticates with `secret`.
  StoreConnection(const std::string& host, uint16_t port, Millis timeout, size_t max_bytes,
                  const std::string& secret);
  ~StoreConnection();
  StoreConnection(const StoreConnection&) = delete;
  StoreConnection& operator=(const StoreConnection&) = delete;

  // What the server said when this connection authenticated: it requires the job's secret.
  bool server_requires_secret() const { return server_requires_secret_; }
  const std::string& peer() const { return peer_; }

  struct Request {
    store_wire::Op op;
    store_wire::Writer* w;  // built by request(): op byte, then a 4-byte id this call fills in
    const std::vector<std::string>* keys;  // name the request in errors
  };
  // A request frame of `op` with room for its id; append the fields after it.
  static store_wire::Writer request(store_wire::Op op);

  // Sends the requests in one write and waits up to `io_budget` for all their replies; returns
  // the payload after the status byte of each. Raises the first failed reply (StoreError for an
  // error or timeout status, NetworkError for a lost connection or a reply that did not come),
  // StoreError "interrupted" as soon as `stop` is set by interrupt_wake()'s caller.
  std::vector<Bytes> call_all(std::span<Request> reqs, Millis io_budget,
                              const std::atomic<bool>& stop);
  Bytes call(store_wire::Op op, store_wire::Writer& w, Millis io_budget,
             const std::vector<std::string>& keys, const std::atomic<bool>& stop) {
    Request req{op, &w, &keys};
    return std::move(call_all({&req, 1}, io_budget, stop).front());
  }

  // Wakes every caller waiting on this connection, so that one whose stop flag was set just
  // before gives up. Never blocks.
  void interrupt_wake();

 private:
  struct Slot {
    bool done = false;
    Bytes payload;  // status byte + body
  };
  void authenticate(const std::string& secret, Millis timeout);
  std::vector<Bytes> exchange(std::span<Request> reqs, Millis io_budget,
                              const std::atomic<bool>& stop, bool auth);
  // The reader's turn: waits for input (or a wake) until `deadline`, then hands out every
  // complete frame read. REQUIRES: this thread holds the reader role, mu_ not held.
  void read_some(std::chrono::steady_clock::time_point deadline);
  void fail_all(const std::string& why);  // REQUIRES: mu_ held
  void cancel(const std::vector<uint32_t>& ids);
  void send_frames(const Bytes& out, std::chrono::steady_clock::time_point deadline);

  const std::string peer_;
  const size_t max_;
  int fd_ = -1;
  int wake_fd_ = -1;                     // eventfd: interrupt_wake() breaks the reader's poll
  bool server_requires_secret_ = false;  // set once, by the constructor

  std::mutex write_mu_;  // one frame batch at a time on the socket

  std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  uint32_t next_id_ = store_wire::kAuthId + 1;
  std::unordered_map<uint32_t, Slot*> slots_;  // replies awaited, by request id
  bool reading_ = false;                       // a caller holds the reader role
  bool broken_ = false;
  bool rejected_ = false;  // broken_ because the server refused this client (StoreError)
  std::string broken_reason_;
  Bytes rbuf_;  // bytes read but not yet a whole frame; only the reader touches it
};

}  // namespace collie
