#pragma once
// Raising an atomic to at least a value, for counters read by other threads (the last sequence
// number seen, a peak). Lock-free, safe from any thread.
#include <atomic>
#include <type_traits>

namespace collie {

// Stores v in a unless a already holds v or more; returns the value a held before (so
// `raise_max(a, v) < v` tells the caller that this call raised it). `order` is used for the
// exchange (relaxed suits counters whose readers need no other ordering).
template <typename T>
T raise_max(std::atomic<T>& a, std::type_identity_t<T> v,
            std::memory_order order = std::memory_order_seq_cst) {
  T cur = a.load(std::memory_order_relaxed);
  while (cur < v && !a.compare_exchange_weak(cur, v, order, std::memory_order_relaxed)) {
  }
  return cur;
}

// The same for an atomic that only one thread ever writes (other threads only read it): a load
// and a store, no locked instruction. Precondition: no other thread writes `a`.
template <typename T>
void raise_single_writer(std::atomic<T>& a, std::type_identity_t<T> v,
                         std::memory_order order = std::memory_order_relaxed) {
  if (a.load(std::memory_order_relaxed) < v) a.store(v, order);
}

}  // namespace collie
