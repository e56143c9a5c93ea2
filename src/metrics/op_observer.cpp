#include "metrics/op_observer.h"

#include <array>
#include <atomic>
#include <mutex>

namespace collie {
namespace {

// Slots are published with release stores after being filled, so readers need no lock.
std::array<std::atomic<OpObserver*>, kMaxOpObservers> g_observers{};
std::atomic<int> g_count{0};
std::mutex g_register_mu;

template <typename F>
void for_each_observer(F&& f) {
  const int n = g_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (OpObserver* o = g_observers[i].load(std::memory_order_acquire)) f(*o);
  }
}

}  // namespace

bool add_op_observer(OpObserver* o) {
  std::lock_guard<std::mutex> lock(g_register_mu);
  const int n = g_count.load(std::memory_order_relaxed);
  if (o == nullptr || n >= kMaxOpObservers) return false;
  for (int i = 0; i < n; ++i) {
    if (g_observers[i].load(std::memory_order_relaxed) == o) return false;
  }
  g_observers[n].store(o, std::memory_order_release);
  g_count.store(n + 1, std::memory_order_release);
  return true;
}

void notify_group_created(const GroupInfo& group) {
  for_each_observer([&](OpObserver& o) { o.on_group_created(group); });
}

void notify_op_started(const GroupInfo& group, const OpCall& call) {
  for_each_observer([&](OpObserver& o) { o.on_started(group, call); });
}

void notify_op_completed(const GroupInfo& group, const OpCall& call,
                         std::chrono::nanoseconds duration) {
  for_each_observer([&](OpObserver& o) { o.on_completed(group, call, duration); });
}

void notify_op_failed(const GroupInfo& group, const OpCall& call, std::chrono::nanoseconds duration,
                      std::exception_ptr error) {
  for_each_observer([&](OpObserver& o) { o.on_failed(group, call, duration, error); });
}

}  // namespace collie
