#include "perf/stop_signal.h"

#include <signal.h>

#include <array>

#include "core/error.h"

namespace collie::perf {
namespace {

std::atomic<int> g_signal{0};
std::atomic<bool> g_installed{false};
constexpr std::array<int, 2> kSignals = {SIGINT, SIGTERM};
std::array<struct sigaction, 2> g_old{};

void on_signal(int sig) {
  int expected = 0;
  g_signal.compare_exchange_strong(expected, sig);  // lock-free: async-signal-safe
}

static_assert(std::atomic<int>::is_always_lock_free);

}  // namespace

StopOnSignal::StopOnSignal() {
  if (g_installed.exchange(true)) throw InvalidArgument("StopOnSignal is already active");
  g_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &sa, &g_old[i]);
}

StopOnSignal::~StopOnSignal() {
  for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &g_old[i], nullptr);
  g_installed.store(false);
}

const std::atomic<int>& StopOnSignal::flag() const { return g_signal; }

}  // namespace collie::perf
