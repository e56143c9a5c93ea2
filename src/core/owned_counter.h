#pragma once
// Counters (sums and maxima) that one thread raises almost always (the thread that submits a
// group's ops, or the backend thread that completes them), raised without a locked instruction by
// that thread.
//
// A CounterOwner guards a set of OwnedCounters (a metrics row, a group's live-status counters).
// The first thread that raises one of them owns the set for the rest of the process: it adds
// with a plain load and store into the counter's own word; every other thread adds to the
// counter's shared word with fetch_add. A reader sums both words. A locked read-modify-write
// costs ~5 ns even uncontended (a dozen of them per op was a third of the always-on layers'
// cost, issue 38); the owner's load and store cost a fraction of that.
//
// Thread safety: add() and load() from any thread. Precondition: `mine` is what
// CounterOwner::mine() returned on the calling thread for the set the counter belongs to (a
// thread that passes true for a set it does not own loses increments).
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "core/atomic_max.h"

namespace collie {

// A number for the calling thread, never 0 and never given to two threads of the process (a
// thread id can be reused once its thread ended; this cannot).
inline uint32_t this_thread_token() {
  static std::atomic<uint32_t> next{1};
  thread_local uint32_t token = 0;
  if (token == 0) token = next.fetch_add(1, std::memory_order_relaxed);
  return token;
}

class CounterOwner {
 public:
  // True when the calling thread owns the set (it claims the set when nobody does yet).
  bool mine() {
    const uint32_t self = this_thread_token();
    uint32_t owner = owner_.load(std::memory_order_relaxed);
    if (owner == self) return true;
    return owner == 0 && owner_.compare_exchange_strong(owner, self, std::memory_order_relaxed);
  }

 private:
  std::atomic<uint32_t> owner_{0};
};

template <typename T>
class OwnedCounter {
 public:
  // `order`: relaxed or release (the order a reader's acquire load() pairs with).
  void add(bool mine, T v, std::memory_order order = std::memory_order_relaxed) {
    if (mine) {
      own_.store(own_.load(std::memory_order_relaxed) + v, order);
    } else {
      shared_.fetch_add(v, order);
    }
  }
  // The sum. Each word is read once; a concurrent add may be in one word and not yet the other.
  T load(std::memory_order order = std::memory_order_relaxed) const {
    return own_.load(order) + shared_.load(order);
  }

 private:
  std::atomic<T> own_{0};
  std::atomic<T> shared_{0};
};

// The same for a value that only rises (the last sequence number completed): the owner stores a
// higher value into its word, every other thread raises the shared word (raise_max); a reader
// takes the larger.
template <typename T>
class OwnedMax {
 public:
  // `order`: relaxed or release.
  void raise(bool mine, T v, std::memory_order order = std::memory_order_relaxed) {
    if (mine) {
      raise_single_writer(own_, v, order);
    } else {
      raise_max(shared_, v, order);
    }
  }
  T load(std::memory_order order = std::memory_order_seq_cst) const {
    return std::max(own_.load(order), shared_.load(order));
  }

 private:
  std::atomic<T> own_{0};
  std::atomic<T> shared_{0};
};

}  // namespace collie
