#include "store/tcp_store.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <span>

#include "core/error.h"
#include "store/socket_util.h"
#include "store/store_secret.h"
#include "store/tcp_store_connection.h"
#include "store/tcp_store_protocol.h"
#include "store/tcp_store_server.h"

namespace collie {

using store_wire::Op;
using store_wire::Reader;
using store_wire::Status;
using store_wire::Writer;

namespace {

Writer request(Op op) { return StoreConnection::request(op); }

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
  conn_ = std::make_shared<StoreConnection>(host_, port_, opts.timeout, opts.max_message_bytes,
                                            secret_);
}

TcpStore::TcpStore(const TcpStore& of, int)
    : Store(of.timeout()),
      conn_(of.conn_),
      host_(of.host_),
      port_(of.port_),
      max_message_bytes_(of.max_message_bytes_),
      secret_(of.secret_) {}

// The client connection closes before the server stops (members destroy in reverse order);
// clones keep it open until the last one goes.
TcpStore::~TcpStore() { conn_.reset(); }

std::shared_ptr<Store> TcpStore::clone() {
  return std::shared_ptr<TcpStore>(new TcpStore(*this, 0));
}

void TcpStore::interrupt() {
  interrupted_.store(true);
  conn_->interrupt_wake();
}

bool TcpStore::members_only() const { return conn_->server_requires_secret(); }

Bytes TcpStore::call(Op op, Writer& w, Millis io_budget, const std::vector<std::string>& keys) {
  return conn_->call(op, w, io_budget, keys, interrupted_);
}

void TcpStore::ping() {
  Writer w = request(Op::kPing);
  call(Op::kPing, w, timeout(), {});
}

void TcpStore::set(const std::string& key, const Bytes& value) {
  Writer w = request(Op::kSet);
  w.str(key).bytes(value);
  call(Op::kSet, w, timeout(), {key});
}

Bytes TcpStore::get(const std::string& key) {
  Writer w = request(Op::kGet);
  w.str(key).i64(timeout().count());
  Bytes p = call(Op::kGet, w, timeout() * 2, {key});
  return Reader(p.data(), p.size()).bytes();
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  Writer w = request(Op::kAdd);
  w.str(key).i64(delta);
  Bytes p = call(Op::kAdd, w, timeout(), {key});
  return Reader(p.data(), p.size()).i64();
}

bool TcpStore::check(const std::vector<std::string>& keys) {
  Writer w = request(Op::kCheck);
  put_keys(w, keys);
  Bytes p = call(Op::kCheck, w, timeout(), keys);
  return Reader(p.data(), p.size()).u8() != 0;
}

void TcpStore::wait(const std::vector<std::string>& keys, Millis t) {
  const Millis wait_for = resolve(t);
  Writer w = request(Op::kWait);
  put_keys(w, keys);
  w.i64(wait_for.count());
  call(Op::kWait, w, wait_for + timeout(), keys);
}

Bytes TcpStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  Writer w = request(Op::kCompareSet);
  w.str(key).bytes(expected).bytes(desired);
  Bytes p = call(Op::kCompareSet, w, timeout(), {key});
  return Reader(p.data(), p.size()).bytes();
}

bool TcpStore::delete_key(const std::string& key) {
  Writer w = request(Op::kDeleteKey);
  w.str(key);
  Bytes p = call(Op::kDeleteKey, w, timeout(), {key});
  return Reader(p.data(), p.size()).u8() != 0;
}

int64_t TcpStore::num_keys() {
  Writer w = request(Op::kNumKeys);
  Bytes p = call(Op::kNumKeys, w, timeout(), {});
  return Reader(p.data(), p.size()).i64();
}

void TcpStore::append(const std::string& key, const Bytes& value) {
  Writer w = request(Op::kAppend);
  w.str(key).bytes(value);
  call(Op::kAppend, w, timeout(), {key});
}

std::vector<Bytes> TcpStore::multi_get(const std::vector<std::string>& keys) {
  Writer w = request(Op::kMultiGet);
  put_keys(w, keys);
  w.i64(timeout().count());
  Bytes p = call(Op::kMultiGet, w, timeout() * 2, keys);
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
  StoreConnection::Request reqs[3] = {{Op::kDeleteKey, &del, &drop_keys},
                                      {Op::kSet, &set, &set_keys},
                                      {Op::kMultiGet, &get, &gather}};
  std::span<StoreConnection::Request> batch(reqs);
  if (drop.empty()) batch = batch.subspan(1);
  auto replies = conn_->call_all(batch, wait_for + this->timeout(), interrupted_);
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
  call(Op::kMultiSet, w, timeout(), keys);
}

}  // namespace collie

namespace collie {

Store::GatherResult TcpStore::gather(const std::string& name, int member, int members,
                                     const Bytes& value, GatherRead read, Millis timeout) {
  check_gather_args(name, member, members, value.size(), read);
  const Millis wait_for = resolve(timeout);
  Writer w = request(Op::kGather);
  w.str(name)
      .u32(static_cast<uint32_t>(member))
      .u32(static_cast<uint32_t>(members))
      .bytes(value)
      .u8(static_cast<uint8_t>(read))
      .i64(wait_for.count());
  Bytes p = call(Op::kGather, w, wait_for + this->timeout(), {name});
  Reader r(p.data(), p.size());
  GatherResult out;
  out.complete = r.u8() != 0;
  const uint32_t n = r.u32();
  if (out.complete) {
    out.values.reserve(n);
    for (uint32_t i = 0; i < n; ++i) out.values.push_back(r.bytes());
    return out;
  }
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t first = r.u32(), last = r.u32();
    for (uint32_t m = first; m <= last && m < static_cast<uint32_t>(members); ++m) {
      out.missing.push_back(static_cast<int>(m));
    }
  }
  return out;
}

}  // namespace collie
