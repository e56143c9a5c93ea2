#include "store/tcp_store.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <span>

#include "core/error.h"
#include "store/socket_util.h"
#include "store/store_secret.h"
#include "store/tcp_store_protocol.h"
#include "store/tcp_store_server.h"

namespace collie {

using store_wire::Op;
using store_wire::Reader;
using store_wire::Status;
using store_wire::Writer;

// One TCP connection; requests are serialized by mu_ (one request, one response). After an I/O
// failure the connection is broken for good: the request stream may be out of step.
class TcpStore::Connection {
 public:
  Connection(const std::string& host, uint16_t port, Millis timeout, size_t max_bytes,
             const std::string& secret)
      : peer_(fmt::format("{}:{}", host, port)), max_(max_bytes) {
    fd_ = net::connect_with_retry(host, port, timeout);
    try {
      authenticate(secret, timeout);
    } catch (...) {
      close(fd_);
      throw;
    }
  }
  ~Connection() { close(fd_); }

  // What the server said when this connection authenticated: it requires the job's secret.
  bool server_requires_secret() const { return server_requires_secret_; }

  // Shuts the socket down (it stays open until destruction, so fd_ cannot be reused under a
  // call in progress): a parked call's poll() returns and the call fails as interrupted.
  void interrupt() {
    interrupted_.store(true);
    ::shutdown(fd_, SHUT_RDWR);
  }

  // Sends one request and returns the payload of an OK response (after the status byte).
  // `io_budget` bounds the whole exchange; `keys` name the request in errors.
  Bytes call(Op op, Writer& w, Millis io_budget, const std::vector<std::string>& keys) {
    Request req{op, &w, &keys};
    return std::move(call_all({&req, 1}, io_budget).front());
  }

  struct Request {
    Op op;
    Writer* w;
    const std::vector<std::string>* keys;  // name the request in errors
  };
  // Pipelines the requests: one write, then the replies in order (the server answers a
  // connection's requests in order). Every reply is read before the first failed one is raised,
  // so the stream stays in step. `io_budget` bounds the whole exchange.
  std::vector<Bytes> call_all(std::span<Request> reqs, Millis io_budget) {
    return call_all_impl(reqs, io_budget, false);
  }

 private:
  // The first frame of the connection: AUTH with the secret ("" = none; a server without a
  // secret accepts it).
  void authenticate(const std::string& secret, Millis timeout) {
    Writer w;
    w.u8(static_cast<uint8_t>(Op::kAuth)).str(secret);
    const std::vector<std::string> none;
    Request req{Op::kAuth, &w, &none};
    const Bytes reply = call_all_impl({&req, 1}, timeout, true).front();
    // A server that predates the flag answers nothing more: treated as requiring none.
    server_requires_secret_ = !reply.empty() && reply[0] == 1;
  }

  std::vector<Bytes> call_all_impl(std::span<Request> reqs, Millis io_budget, bool auth) {
    Bytes out;
    for (auto& r : reqs) {
      if (r.w->payload_size() > max_) {
        throw StoreError(fmt::format(
            "TcpStore {}: {} request on key(s) [{}] is {} bytes, above max_message_bytes ({}); "
            "store smaller values or raise TcpStoreOptions::max_message_bytes on every rank",
            peer_, store_wire::op_name(r.op), fmt::join(*r.keys, ", "), r.w->payload_size(), max_));
      }
      const Bytes& frame = r.w->finish();
      out.insert(out.end(), frame.begin(), frame.end());
    }
    std::lock_guard<std::mutex> lk(mu_);
    if (interrupted_.load())
      throw_store_interrupted(*reqs[0].keys, fmt::format("TcpStore {}", peer_));
    if (broken_) {
      throw NetworkError(
          fmt::format("TcpStore {}: the connection broke earlier ({}); create a new store client",
                      peer_, broken_reason_));
    }
    const auto deadline = std::chrono::steady_clock::now() + io_budget;
    std::vector<Bytes> payloads(reqs.size());
    const Request* at = &reqs[0];
    try {
      net::send_all(fd_, out.data(), out.size(), deadline, peer_);
      for (size_t i = 0; i < reqs.size(); ++i) {
        at = &reqs[i];
        payloads[i] = read_reply(at->op, deadline);
      }
    } catch (const NetworkError& e) {
      broken_ = true;
      broken_reason_ = e.what();
      if (interrupted_.load())
        throw_store_interrupted(*at->keys, fmt::format("TcpStore {}", peer_));
      throw NetworkError(fmt::format("TcpStore {} on key(s) [{}]: {}", store_wire::op_name(at->op),
                                     fmt::join(*at->keys, ", "), e.what()));
    }
    for (size_t i = 0; i < reqs.size(); ++i) {
      Bytes& payload = payloads[i];
      Reader r(payload.data(), payload.size());
      const auto status = static_cast<Status>(r.u8());
      if (status == Status::kTimeout) {
        throw_store_timeout(*reqs[i].keys, Millis(r.i64()), fmt::format("TcpStore {}", peer_));
      }
      if (status == Status::kError) {
        const std::string msg = r.str();
        if (auth || msg.rfind("store authentication failed", 0) == 0) {
          broken_ = true;
          broken_reason_ = msg;
          throw StoreError(fmt::format("{} (store {}; every rank of a job needs the same {})", msg,
                                       peer_, kStoreSecretEnv));
        }
        throw StoreError(fmt::format("TcpStore {}: {}", peer_, msg));
      }
      payload.erase(payload.begin());
    }
    return payloads;
  }

  // One reply frame's payload (status byte first). REQUIRES: mu_ held.
  Bytes read_reply(Op op, std::chrono::steady_clock::time_point deadline) {
    uint8_t hdr[store_wire::kHeaderBytes];
    net::recv_all(fd_, hdr, sizeof(hdr), deadline, peer_);
    const uint32_t len = store_wire::decode_u32(hdr);
    if (len > max_ || len == 0) {
      broken_ = true;
      broken_reason_ = "oversize reply";
      throw StoreError(
          fmt::format("TcpStore {}: {} reply of {} bytes is outside max_message_bytes ({}); raise "
                      "TcpStoreOptions::max_message_bytes on every rank",
                      peer_, store_wire::op_name(op), len, max_));
    }
    Bytes payload(len);
    net::recv_all(fd_, payload.data(), len, deadline, peer_);
    return payload;
  }

  std::string peer_;
  size_t max_;
  int fd_ = -1;
  std::atomic<bool> interrupted_{false};
  std::mutex mu_;
  bool broken_ = false;
  std::string broken_reason_;
  bool server_requires_secret_ = false;  // set once, by the constructor
};

namespace {

Writer request(Op op) {
  Writer w;
  w.u8(static_cast<uint8_t>(op));
  return w;
}

void put_keys(Writer& w, const std::vector<std::string>& keys) {
  w.u32(static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) w.str(k);
}

}  // namespace

TcpStore::TcpStore(const TcpStoreOptions& opts)
    : Store(opts.timeout),
      host_(opts.host),
      max_message_bytes_(opts.max_message_bytes),
      secret_(opts.secret ? *opts.secret : store_secret_from_env()) {
  port_ = opts.port;
  if (opts.is_server) {
    TcpStoreLimits limits = opts.limits;
    limits.max_message_bytes = opts.max_message_bytes;
    server_ = std::make_unique<TcpStoreServer>(opts.bind_host.empty() ? opts.host : opts.bind_host,
                                               opts.port, limits, secret_);
    port_ = server_->port();
  }
  conn_ = std::make_unique<Connection>(host_, port_, opts.timeout, opts.max_message_bytes, secret_);
}

// The client connection closes before the server stops (members destroy in reverse order).
TcpStore::~TcpStore() { conn_.reset(); }

std::shared_ptr<Store> TcpStore::clone() {
  TcpStoreOptions o;
  o.host = host_;
  o.port = port_;
  o.timeout = timeout();
  o.max_message_bytes = max_message_bytes_;
  o.secret = secret_;
  return std::make_shared<TcpStore>(o);
}

void TcpStore::interrupt() { conn_->interrupt(); }

bool TcpStore::members_only() const { return conn_->server_requires_secret(); }

void TcpStore::ping() {
  Writer w = request(Op::kPing);
  conn_->call(Op::kPing, w, timeout(), {});
}

void TcpStore::set(const std::string& key, const Bytes& value) {
  Writer w = request(Op::kSet);
  w.str(key).bytes(value);
  conn_->call(Op::kSet, w, timeout(), {key});
}

Bytes TcpStore::get(const std::string& key) {
  Writer w = request(Op::kGet);
  w.str(key).i64(timeout().count());
  Bytes p = conn_->call(Op::kGet, w, timeout() * 2, {key});
  return Reader(p.data(), p.size()).bytes();
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  Writer w = request(Op::kAdd);
  w.str(key).i64(delta);
  Bytes p = conn_->call(Op::kAdd, w, timeout(), {key});
  return Reader(p.data(), p.size()).i64();
}

bool TcpStore::check(const std::vector<std::string>& keys) {
  Writer w = request(Op::kCheck);
  put_keys(w, keys);
  Bytes p = conn_->call(Op::kCheck, w, timeout(), keys);
  return Reader(p.data(), p.size()).u8() != 0;
}

void TcpStore::wait(const std::vector<std::string>& keys, Millis t) {
  const Millis wait_for = resolve(t);
  Writer w = request(Op::kWait);
  put_keys(w, keys);
  w.i64(wait_for.count());
  conn_->call(Op::kWait, w, wait_for + timeout(), keys);
}

Bytes TcpStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  Writer w = request(Op::kCompareSet);
  w.str(key).bytes(expected).bytes(desired);
  Bytes p = conn_->call(Op::kCompareSet, w, timeout(), {key});
  return Reader(p.data(), p.size()).bytes();
}

bool TcpStore::delete_key(const std::string& key) {
  Writer w = request(Op::kDeleteKey);
  w.str(key);
  Bytes p = conn_->call(Op::kDeleteKey, w, timeout(), {key});
  return Reader(p.data(), p.size()).u8() != 0;
}

int64_t TcpStore::num_keys() {
  Writer w = request(Op::kNumKeys);
  Bytes p = conn_->call(Op::kNumKeys, w, timeout(), {});
  return Reader(p.data(), p.size()).i64();
}

void TcpStore::append(const std::string& key, const Bytes& value) {
  Writer w = request(Op::kAppend);
  w.str(key).bytes(value);
  conn_->call(Op::kAppend, w, timeout(), {key});
}

std::vector<Bytes> TcpStore::multi_get(const std::vector<std::string>& keys) {
  Writer w = request(Op::kMultiGet);
  put_keys(w, keys);
  w.i64(timeout().count());
  Bytes p = conn_->call(Op::kMultiGet, w, timeout() * 2, keys);
  Reader r(p.data(), p.size());
  std::vector<Bytes> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) out.push_back(r.bytes());
  return out;
}

std::vector<Bytes> TcpStore::set_and_gather(const std::string& drop, const std::string& key,
                                            const Bytes& value,
                                            const std::vector<std::string>& gather,
                                            Millis timeout) {
  const Millis wait_for = resolve(timeout);
  const std::vector<std::string> drop_keys{drop}, set_keys{key};
  Writer del = request(Op::kDeleteKey), set = request(Op::kSet), get = request(Op::kMultiGet);
  del.str(drop);
  set.str(key).bytes(value);
  put_keys(get, gather);
  get.i64(wait_for.count());
  Connection::Request reqs[3] = {{Op::kDeleteKey, &del, &drop_keys},
                                 {Op::kSet, &set, &set_keys},
                                 {Op::kMultiGet, &get, &gather}};
  std::span<Connection::Request> batch(reqs);
  if (drop.empty()) batch = batch.subspan(1);
  auto replies = conn_->call_all(batch, wait_for + this->timeout());
  Bytes& p = replies.back();
  Reader r(p.data(), p.size());
  std::vector<Bytes> out;
  out.reserve(gather.size());
  for (size_t i = 0; i < gather.size(); ++i) out.push_back(r.bytes());
  return out;
}

void TcpStore::multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  if (keys.size() != values.size()) {
    throw InvalidArgument(
        fmt::format("multi_set: {} keys but {} values", keys.size(), values.size()));
  }
  Writer w = request(Op::kMultiSet);
  put_keys(w, keys);
  for (const auto& v : values) w.bytes(v);
  conn_->call(Op::kMultiSet, w, timeout(), keys);
}

}  // namespace collie
