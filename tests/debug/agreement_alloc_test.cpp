// DETAIL's fast path (the ranks agree) allocates nothing and asks the store nothing, at 2 and at
// 64 ranks: a per-thread count of operator new calls and a store that counts requests, around
// Fingerprint::of + FingerprintAgreement::check as DesyncCheckingProcessGroup calls them.
// (A binary of its own: it replaces the global operator new.)
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <thread>

#include "debug/agreement_tree.h"
#include "debug/fingerprint_agreement.h"
#include "store/hash_store.h"

namespace {
thread_local uint64_t t_allocations = 0;
}  // namespace

void* operator new(size_t n) {
  ++t_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace collie {
namespace {

// Counts the requests made through it.
class CountingStore : public HashStore {
 public:
  using HashStore::HashStore;
  void set(const std::string& k, const Bytes& v) override { ++n, HashStore::set(k, v); }
  Bytes get(const std::string& k) override { return ++n, HashStore::get(k); }
  int64_t add(const std::string& k, int64_t d) override { return ++n, HashStore::add(k, d); }
  bool check(const std::vector<std::string>& k) override { return ++n, HashStore::check(k); }
  void wait(const std::vector<std::string>& k, Millis t) override { ++n, HashStore::wait(k, t); }
  Bytes compare_set(const std::string& k, const Bytes& e, const Bytes& d) override {
    return ++n, HashStore::compare_set(k, e, d);
  }
  bool delete_key(const std::string& k) override { return ++n, HashStore::delete_key(k); }
  std::vector<Bytes> multi_get(const std::vector<std::string>& k) override {
    return ++n, HashStore::multi_get(k);
  }
  std::atomic<int64_t> n{0};
};

TEST(DetailFastPath, NeverAllocatesNorAsksTheStore) {
  for (int size : {2, 64}) {
    auto store = std::make_shared<CountingStore>(Millis(20000));
    std::vector<uint64_t> allocations(static_cast<size_t>(size), 99);
    std::vector<std::string> errors(static_cast<size_t>(size));
    std::atomic<int> connected{0};
    int64_t requests_before = -1;
    std::vector<std::thread> ts;
    for (int r = 0; r < size; ++r) {
      ts.emplace_back([&, r] {
        try {
          auto tree =
              AgreementTree::connect(store, "alloc_test", r, size, "127.0.0.1", Millis(20000));
          FingerprintAgreement agreement(store, r, size, {}, std::move(tree));
          std::vector<float> buf(256);
          OpCall call;
          call.type = OpType::AllReduce;
          call.input = call.output = TensorView::cpu(buf.data(), buf.size(), DType::Float32);
          auto one = [&](uint64_t seq) {
            call.seq = seq;
            const Fingerprint f = Fingerprint::of(call, r, size, /*copy_splits=*/false);
            if (agreement.check(f, call.input_splits, call.output_splits, Millis(20000))) {
              throw std::runtime_error("the ranks disagreed");
            }
          };
          one(1);  // warm up (the log's first line, lazily built statics)
          if (++connected == size) requests_before = store->n.load();
          while (connected.load() < size) std::this_thread::yield();
          const uint64_t before = t_allocations;
          for (uint64_t seq = 2; seq < 200; ++seq) one(seq);
          allocations[static_cast<size_t>(r)] = t_allocations - before;
        } catch (const std::exception& e) {
          errors[static_cast<size_t>(r)] = e.what();
        }
      });
    }
    for (auto& t : ts) t.join();
    for (int r = 0; r < size; ++r) {
      EXPECT_EQ(errors[r], "") << "size " << size << " rank " << r;
      EXPECT_EQ(allocations[r], 0u) << "size " << size << " rank " << r;
    }
    EXPECT_EQ(store->n.load(), requests_before) << "size " << size;
  }
}

// The counter sees allocations: the same check with copied splits on an all_to_all allocates.
TEST(DetailFastPath, TheCounterSeesAllocations) {
  std::vector<int64_t> splits = {1, 1};
  std::vector<float> buf(2);
  OpCall call;
  call.type = OpType::AllToAll;
  call.input = call.output = TensorView::cpu(buf.data(), buf.size(), DType::Float32);
  call.input_splits = call.output_splits = splits;
  const uint64_t before = t_allocations;
  const Fingerprint f = Fingerprint::of(call, 0, 2, /*copy_splits=*/true);
  EXPECT_GT(t_allocations - before, 0u);
  EXPECT_TRUE(f.has_splits);
}

}  // namespace
}  // namespace collie
