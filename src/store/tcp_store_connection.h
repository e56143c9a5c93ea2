#pragma once
// StoreConnection: the one TCP connection a TcpStore and all its clones share. Every request
// carries an id; the server answers each when it can (a parked wait does not hold up the
// requests after it), so several threads have requests in flight on it at once.
//
// Reading: a caller waiting for its replies reads them itself while it is the only one waiting
// (no thread of its own: a client used from one thread at a time costs no extra thread). Once
// the TcpStore is cloned (several threads will use it), or the first time two callers wait at
// once, the connection starts its reader thread (`collie-store-rd`), which from then on reads
// every frame and wakes only the caller whose id it carries: a thread parked in a long wait is
// never woken by others' replies.
// Stopping a caller: interrupt_wake() wakes every waiter (and the reader's poll); a caller whose
// `stop` flag is set gives up at once, and its parked requests are cancelled on the server.
// A lost connection fails every call in flight and every later call with NetworkError; a reply
// that does not come within the call's budget fails that call alone (the stream stays in step).
//
// Ownership: owns the socket, closed when the last TcpStore sharing it goes. Thread-safe.
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <mutex>
#include <span>
#include <string>
#include <thread>
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
  // the body of each (after its id and status). Raises the first failed reply (StoreError for an
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

  // Starts the reader thread now (idempotent): for a connection about to be used by several
  // threads (TcpStore::clone()), so that a thread parked in a wait is never the reader.
  void start_reader();

 private:
  struct Slot {
    bool done = false;
    uint8_t status = 0;          // store_wire::Status of the reply
    Bytes body;                  // the reply after its id and status
    std::condition_variable cv;  // notified when done (or the connection broke)
  };
  struct Delivery {
    uint32_t id;
    uint8_t status;
    Bytes body;
  };
  // u32 length, u32 id, u8 status: what precedes a reply's body.
  static constexpr size_t kReplyHead = 9;
  static constexpr size_t kStageBytes = 64 << 10;
  void authenticate(const std::string& secret, Millis timeout);
  std::vector<Bytes> exchange(std::span<Request> reqs, Millis io_budget,
                              const std::atomic<bool>& stop, bool auth);
  // The reader's turn: waits for input (or a wake) until `deadline`, then hands out every
  // complete frame read. REQUIRES: this thread holds the reader role, mu_ not held.
  void read_some(std::chrono::steady_clock::time_point deadline);
  void fail_all(const std::string& why);     // REQUIRES: mu_ held
  void notify_all_slots();                   // REQUIRES: mu_ held
  void reader_loop();                        // collie-store-rd's body
  void run_reader(std::promise<void> done);  // reader_loop(), then fulfils `done`
  void start_reader_locked();                // REQUIRES: mu_ held
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
  bool reader_thread_ = false;                 // collie-store-rd reads (callers never do)
  bool stopping_ = false;                      // the destructor stops collie-store-rd
  std::future<void> reader_done_;  // ready once the detached reader thread left reader_loop
  pid_t reader_pid_ = 0;           // the process that started the reader thread
  bool broken_ = false;
  bool rejected_ = false;  // broken_ because the server refused this client (StoreError)
  std::string broken_reason_;
  // The reader's state (only whoever reads touches it): the staging buffer with
  // [stage_off_, stage_end_) unparsed, and a large reply being received into body_.
  Bytes stage_;
  size_t stage_off_ = 0, stage_end_ = 0;
  bool in_body_ = false;
  Bytes body_;
  size_t body_got_ = 0;
  uint32_t cur_id_ = 0;
  uint8_t cur_status_ = 0;
};

}  // namespace collie
