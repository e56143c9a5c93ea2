#include "debug/fingerprint_exchange.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "comm/process_group.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"
#include "debug/record_mesh.h"
#include "discovery/bind_address.h"
#include "store/store.h"

namespace collie {
namespace {

// The fingerprints of the keys present in the store now (never waits); nullopt for the others.
void read_present(Store& store, const std::vector<std::string>& keys,
                  std::vector<std::optional<Fingerprint>>& out) {
  for (size_t r = 0; r < keys.size(); ++r) {
    if (store.check({keys[r]})) out[r] = Fingerprint::decode(store.get(keys[r]));
  }
}

class StoreExchange : public FingerprintExchange {
 public:
  StoreExchange(std::shared_ptr<Store> store, int rank, int size)
      : store_(std::move(store)), rank_(rank), size_(size) {}

  Gathered exchange(const Fingerprint& mine, Millis timeout) override {
    std::vector<std::string> keys;
    keys.reserve(static_cast<size_t>(size_));
    for (int r = 0; r < size_; ++r) keys.push_back(fmt::format("desync/c/{}/{}", mine.seq, r));
    Gathered g;
    g.fps.resize(static_cast<size_t>(size_));
    try {
      // One round trip: drop our key of two checks ago, publish ours, gather everyone's.
      auto vals = store_->set_and_gather(old_keys_[0], keys[rank_], mine.encode(), keys, timeout);
      for (int r = 0; r < size_; ++r) g.fps[r] = Fingerprint::decode(vals[r]);
      old_keys_[0] = std::move(old_keys_[1]);
      old_keys_[1] = keys[rank_];
    } catch (const StoreError&) {
      // Someone did not arrive in time: read what did arrive so the error names the missing.
      read_present(*store_, keys, g.fps);
    }
    return g;
  }

 private:
  std::shared_ptr<Store> store_;
  const int rank_, size_;
  // This rank's keys of its last two checks. A rank sets its key of check k only after its
  // gather of check k-1 was answered, so once check k has gathered every key nobody reads the
  // keys of check k-1 any more: the next check drops ours (old_keys_[0]).
  std::string old_keys_[2];
};

class MeshExchange : public FingerprintExchange {
 public:
  MeshExchange(std::unique_ptr<RecordMesh> mesh, std::shared_ptr<Store> store)
      : mesh_(std::move(mesh)), store_(std::move(store)) {}

  Gathered exchange(const Fingerprint& mine, Millis timeout) override {
    ++count_;
    const auto start = Clock::system().now();
    const int n = mesh_->size(), me = mesh_->rank();
    const size_t bytes = static_cast<size_t>(n) * Fingerprint::kRecordBytes;
    send_.resize(bytes);
    recv_.resize(bytes);
    mine.encode_records(n, send_.data());
    try {
      mesh_->exchange(send_.data(), recv_.data(), timeout);
    } catch (const std::exception& e) {
      log(LogLevel::Warning, "DETAIL fingerprint exchange #{} failed ({}); asking the store",
          count_, e.what());
      return through_store(mine, timeout, start);
    }
    return gathered_from_records(mine, recv_.data(), n, me);
  }

  void shutdown() override { mesh_->close(); }

 private:
  // After a failed exchange: the ranks that came publish their fingerprints; wait until the
  // timeout has passed since this rank arrived (at least a short grace) for the others'.
  Gathered through_store(const Fingerprint& mine, Millis timeout, Clock::TimePoint start) {
    const int n = mesh_->size(), me = mesh_->rank();
    auto key = [&](int r) { return fmt::format("desync/x/{}/{}", count_, r); };
    std::vector<std::string> keys;
    for (int r = 0; r < n; ++r) keys.push_back(key(r));
    Gathered g;
    g.fps.resize(static_cast<size_t>(n));
    try {
      store_->set(keys[me], mine.encode());
      const Millis grace = std::clamp(timeout / 4, Millis(200), Millis(2000));
      const auto deadline = std::max(start + timeout, Clock::system().now() + grace);
      const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::system().now());
      try {
        store_->wait(keys, std::max(left, Millis(1)));
      } catch (const StoreError&) {
      }
      read_present(*store_, keys, g.fps);
    } catch (const StoreError& e) {
      // The store is gone too (its host died): only this rank's own fingerprint is known.
      log(LogLevel::Warning, "DETAIL: the store is unreachable as well ({})", e.what());
      g.fps[me] = mine;
    }
    return g;
  }

  std::unique_ptr<RecordMesh> mesh_;
  std::shared_ptr<Store> store_;
  uint64_t count_ = 0;  // exchanges so far: the same on every rank
  std::vector<uint8_t> send_, recv_;
};

}  // namespace

FingerprintExchange::Gathered gathered_from_records(const Fingerprint& mine, const uint8_t* records,
                                                    int n, int me) {
  FingerprintExchange::Gathered g;
  g.splits_pairs_of = me;
  g.fps.resize(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    const uint8_t* rec = records + static_cast<size_t>(r) * Fingerprint::kRecordBytes;
    g.fps[r] = r == me ? mine : Fingerprint::decode_record(rec, me, n);
  }
  return g;
}

std::unique_ptr<FingerprintExchange> make_store_exchange(std::shared_ptr<Store> store, int rank,
                                                         int size) {
  return std::make_unique<StoreExchange>(std::move(store), rank, size);
}

std::unique_ptr<FingerprintExchange> make_mesh_exchange(std::unique_ptr<RecordMesh> mesh,
                                                        std::shared_ptr<Store> store) {
  return std::make_unique<MeshExchange>(std::move(mesh), std::move(store));
}

std::unique_ptr<RecordMesh> make_fingerprint_mesh(const ProcessGroup& pg, const std::string& tag,
                                                  const Env& env) {
  const GroupInfo& i = pg.info();
  const BindChoice bind = choose_gloo_bind(env, i.store_host);
  return RecordMesh::connect(i.store, tag, i.rank, i.size, Fingerprint::kRecordBytes, bind.address,
                             i.timeout);
}

}  // namespace collie
