#pragma once
// GlooStoreAdapter: presents a collie::Store as the gloo::rendezvous::Store that
// gloo::rendezvous::Context::connectFullMesh needs. Every call is bounded by the store's timeout
// (or the timeout gloo passes to wait); store errors propagate as collie::StoreError.
// Ownership: shares ownership of the collie store. Thread safety: as the underlying store.
#include <gloo/rendezvous/store.h>

#include <memory>

#include "store/store.h"

namespace collie {

class GlooStoreAdapter : public gloo::rendezvous::Store {
 public:
  explicit GlooStoreAdapter(std::shared_ptr<collie::Store> store) : store_(std::move(store)) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  std::shared_ptr<collie::Store> store_;
};

}  // namespace collie
