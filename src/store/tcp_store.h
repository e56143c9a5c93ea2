#pragma once
// TcpStore: client of a TcpStoreServer; when opts.is_server is set it also owns the server
// (rank 0 by default), which runs an event loop on its own thread. Wire protocol
// (store/tcp_store_protocol.h): length-prefixed binary frames, each request with an id, each
// reply naming the id it answers, in any order. A TcpStore and all its clone()s share ONE
// connection (store/tcp_store_connection.h): a rank holds one descriptor on the store host
// however many of its threads use the store, and a thread parked in a wait does not hold up the
// others. Message sizes are bounded by max_message_bytes (an oversize request throws StoreError
// before anything is sent). The client connects with exponential backoff + jitter until
// opts.timeout passes, then throws NetworkError naming host:port. Waits are parked on the
// server, which answers with a timeout that the client raises as StoreError naming the keys.
// A lost connection (the server process died) raises NetworkError on the pending and every
// later call of every clone. Thread safety: a TcpStore may be shared by threads.
//
// Authentication: every connection starts with an AUTH frame carrying the store secret
// (opts.secret, or COLLIE_STORE_SECRET when that is unset); a server with a secret refuses any
// other first request, and the client raises StoreError "store authentication failed ...".
// The server's resource caps and timeouts are opts.limits (store/tcp_store_server.h).
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/export.h"
#include "store/store.h"
#include "store/tcp_store_server.h"

namespace collie {

class StoreConnection;
namespace store_wire {
enum class Op : uint8_t;
class Writer;
}  // namespace store_wire

struct TcpStoreOptions {
  std::string host = "127.0.0.1";  // address to connect to (and to bind when is_server)
  uint16_t port = 0;               // 0 with is_server: pick a free port (see port())
  bool is_server = false;
  std::string bind_host;             // is_server: address the server listens on ("" = host)
  Millis timeout = kDefaultTimeout;  // for get/wait and for connecting
  size_t max_message_bytes = 64u << 20;
  // The per-job secret; unset = the environment's COLLIE_STORE_SECRET ("" there or here = none).
  std::optional<std::string> secret;
  // Server side (is_server) caps and timeouts; limits.max_message_bytes is replaced by
  // max_message_bytes above.
  TcpStoreLimits limits;
};

class COLLIE_API TcpStore : public Store {
 public:
  explicit TcpStore(const TcpStoreOptions& opts);
  ~TcpStore() override;

  // The server's port (the bound one when opts.port was 0).
  uint16_t port() const { return port_; }
  // Round trip to the server; throws NetworkError when it is gone.
  void ping();
  const std::string& host() const { return host_; }

  // Another client on the same connection, with its own interrupt() (a client only).
  std::shared_ptr<Store> clone() override;
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, Millis timeout) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  void append(const std::string& key, const Bytes& value) override;
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys) override;
  void multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override;
  void interrupt() override;
  // Whether the server answered the authentication saying it requires a secret.
  bool members_only() const override;
  std::vector<Bytes> set_and_gather(const std::string& drop, const std::string& key,
                                    const Bytes& value, const std::vector<std::string>& gather,
                                    Millis timeout) override;
  // One GATHER request (store/store_engine.h): O(1) work at the server beyond the payload.
  GatherResult gather(const std::string& name, int member, int members, const Bytes& value,
                      GatherRead read, Millis timeout) override;
  using Store::set;
  using Store::wait;

  // The server this client owns (is_server), or null. Its stats() are the scale benchmark's.
  const TcpStoreServer* server() const { return server_.get(); }

 private:
  TcpStore(const TcpStore& of, int /*clone tag*/);
  Bytes call(store_wire::Op op, store_wire::Writer& w, Millis io_budget,
             const std::vector<std::string>& keys);
  std::unique_ptr<TcpStoreServer> server_;
  std::shared_ptr<StoreConnection> conn_;
  std::string host_;
  uint16_t port_ = 0;
  size_t max_message_bytes_;
  std::string secret_;
  std::atomic<bool> interrupted_{false};  // this client's alone (interrupt())
};

}  // namespace collie
