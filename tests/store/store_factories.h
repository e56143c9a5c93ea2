#pragma once
// Factories that give the conformance suite a fresh store per test: `primary` is used directly,
// `connect()` returns another client of the same store (another connection, another FileStore
// instance on the same file, or the same object for in-process stores).
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "store/store.h"

namespace collie {

struct StoreFixture {
  std::shared_ptr<Store> primary;
  std::function<std::shared_ptr<Store>()> connect;
  std::function<void()> cleanup;
  ~StoreFixture() {
    connect = nullptr;
    primary.reset();
    if (cleanup) cleanup();
  }
};

struct StoreFactory {
  std::string name;
  std::function<std::unique_ptr<StoreFixture>()> make;
};

std::vector<StoreFactory> all_store_factories();

// Test names show the store's name, not the factory's bytes.
inline void PrintTo(const StoreFactory& f, std::ostream* os) { *os << f.name; }

// A fresh path under the temp directory, unique per process and call (nothing is created).
std::string temp_store_path(const std::string& tag);

}  // namespace collie
