#include "core/tsc_clock.h"

#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "core/env.h"

namespace collie {
namespace {

#if defined(__x86_64__)
constexpr bool kHasTsc = true;
uint64_t read_tsc() { return __rdtsc(); }
#else  // no time-stamp counter to read: get() returns nullptr
constexpr bool kHasTsc = false;
uint64_t read_tsc() { return 0; }
#endif

int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string read_file(const char* path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool has_word(std::string_view text, std::string_view word) {
  for (size_t at = text.find(word); at != std::string_view::npos; at = text.find(word, at + 1)) {
    const bool starts = at == 0 || text[at - 1] == ' ' || text[at - 1] == '\t';
    const size_t end = at + word.size();
    const bool ends = end == text.size() || text[end] == ' ' || text[end] == '\n';
    if (starts && ends) return true;
  }
  return false;
}

// A reading of CLOCK_MONOTONIC with the counter around it: the tightest of a few (a VM exit or
// an interrupt between the two counter reads would put the pair's tick hundreds of nanoseconds
// off); false when none was tight (the thread kept being interrupted).
bool read_pair(uint64_t& tsc, int64_t& ns) {
  uint64_t best = 2000;  // ticks, ~0.7 us at 3 GHz; a clock_gettime takes ~70
  for (int tries = 0; tries < 4; ++tries) {
    const uint64_t before = read_tsc();
    const int64_t n = monotonic_ns();
    const uint64_t after = read_tsc();
    if (after - before < best) {
      best = after - before;
      tsc = before + (after - before) / 2;
      ns = n;
    }
  }
  return best < 2000;
}

// Where an anchor (ns at tick `tsc`, `rate` ns per tick) puts tick `t`; t may precede tsc.
int64_t extrapolate(int64_t ns, uint64_t tsc, double rate, uint64_t t) {
  return ns + static_cast<int64_t>(static_cast<double>(static_cast<int64_t>(t - tsc)) * rate);
}

}  // namespace

bool TscClock::usable(std::string_view clocksource, std::string_view cpu_flags) {
  while (!clocksource.empty() && (clocksource.back() == '\n' || clocksource.back() == ' '))
    clocksource.remove_suffix(1);
  return clocksource == "tsc" && has_word(cpu_flags, "constant_tsc") &&
         has_word(cpu_flags, "nonstop_tsc");
}

TscClock* TscClock::get() {
  static TscClock* clock = []() -> TscClock* {
    if (!kHasTsc || Env::process().get("COLLIE_TSC_CLOCK") == "0") return nullptr;
    const std::string source =
        read_file("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    std::string flags = read_file("/proc/cpuinfo");
    const size_t at = flags.find("\nflags");
    flags = at == std::string::npos ? "" : flags.substr(at + 1, flags.find('\n', at + 1) - at);
    if (!usable(source, flags)) return nullptr;
    auto* c = new TscClock;  // lives as long as the process, as the clock that hands it out
    if (c->anchors() > 0) return c;
    delete c;  // could not calibrate (every reading interrupted): steady_clock it is
    return nullptr;
  }();
  return clock;
}

TscClock::TscClock() {
  uint64_t t0 = 0, t1 = 0;
  int64_t n0 = 0, n1 = 0;
  if (!read_pair(t0, n0)) return;  // no anchor: every reading is CLOCK_MONOTONIC's
  do {
    if (!read_pair(t1, n1)) return;
  } while (n1 - n0 < 1'000'000);
  ref_tsc_ = t0, ref_ns_ = n0;
  write_anchor(t1, n1, 0);
}

int64_t TscClock::slow_now() {
  slow_reads_.fetch_add(1, std::memory_order_relaxed);
  return monotonic_ns();
}

int64_t TscClock::now_ns() {
  const uint64_t t = read_tsc();
  for (;;) {
    const Anchor& a = copies_[active_.load(std::memory_order_acquire)];
    const uint64_t v = a.seq.load(std::memory_order_acquire);
    const uint64_t tsc = a.tsc.load(std::memory_order_relaxed);
    const int64_t ns = a.ns.load(std::memory_order_relaxed);
    const double rate = a.rate.load(std::memory_order_relaxed);
    const int64_t max_ticks = a.max_ticks.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if ((v & 1) != 0 || a.seq.load(std::memory_order_relaxed) != v) continue;  // rewritten
    if (rate <= 0) return slow_now();
    const int64_t ticks = static_cast<int64_t>(t - tsc);  // < 0: read before a newer anchor
    const int64_t now = extrapolate(ns, tsc, rate, t);
    if (ticks < max_ticks) return now;
    // Past the interval: one thread re-anchors; the others extrapolate on (accurate for a while
    // longer) unless the anchor is two intervals old.
    if (!writing_.exchange(true, std::memory_order_acquire)) {
      uint64_t tick;
      int64_t true_ns;
      int64_t r;
      if (read_pair(tick, true_ns)) {
        slow_reads_.fetch_add(1, std::memory_order_relaxed);
        // The old anchor's value at that tick, when it is still close to the truth.
        const int64_t old = ticks < 2 * max_ticks ? extrapolate(ns, tsc, rate, tick) : 0;
        r = write_anchor(tick, true_ns, old);
      } else {
        r = slow_now();
      }
      writing_.store(false, std::memory_order_release);
      return r;
    }
    return ticks < 2 * max_ticks ? now : slow_now();
  }
}

int64_t TscClock::write_anchor(uint64_t tick, int64_t ns, int64_t old) {
  if (tick <= ref_tsc_ || ns - ref_ns_ < 1'000'000) return std::max(ns, old);
  // The rate CLOCK_MONOTONIC ran at against the counter since the last true reading.
  const double rate = static_cast<double>(ns - ref_ns_) / static_cast<double>(tick - ref_tsc_);
  // Extrapolate no further than the rate was measured over (the first anchor's 1 ms, then
  // doubling up to kAnchorNs): the pairs' uncertainty then bounds the error, ~1 us at worst.
  const double span = std::min<double>(kAnchorNs, 2.0 * static_cast<double>(ns - ref_ns_));
  ref_tsc_ = tick, ref_ns_ = ns;
  // Never go back from where the old anchor put this tick: when it is ahead of the true time,
  // start there and run slower over the next interval by what it is ahead, to meet the truth.
  int64_t start = ns;
  double next_rate = rate;
  if (old > ns) {
    start = old;
    next_rate = rate * std::max(0.5, 1.0 - static_cast<double>(old - ns) / span);
  }
  const int next = 1 - active_.load(std::memory_order_relaxed);
  Anchor& a = copies_[next];
  const uint64_t v = a.seq.load(std::memory_order_relaxed);
  a.seq.store(v + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  a.tsc.store(tick, std::memory_order_relaxed);
  a.ns.store(start, std::memory_order_relaxed);
  a.rate.store(next_rate, std::memory_order_relaxed);
  a.max_ticks.store(static_cast<int64_t>(span / rate), std::memory_order_relaxed);
  a.seq.store(v + 2, std::memory_order_release);
  active_.store(next, std::memory_order_release);
  anchors_.fetch_add(1, std::memory_order_relaxed);
  return start;
}

}  // namespace collie
