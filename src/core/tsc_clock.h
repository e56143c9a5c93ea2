#pragma once
// Monotonic nanoseconds from the CPU's time-stamp counter, for the one clock read an op's
// always-on bookkeeping cannot avoid (issue 38: <= 100 ns per op; clock_gettime through the vDSO
// costs ~22 ns on this project's VMs, a TSC read and a multiply ~10).
//
// The value follows CLOCK_MONOTONIC (std::chrono::steady_clock): every kAnchorNs the clock reads
// CLOCK_MONOTONIC and the counter together (an anchor) and extrapolates from the newest anchor at
// the rate measured between the last two; a drift it finds is slewed out over the next interval
// rather than stepped, so readings do not go back. A reading more than two intervals past the
// newest anchor (nobody read the clock for that long) returns CLOCK_MONOTONIC itself.
//
// Used only where the kernel trusts the counter: its clocksource is "tsc" and the CPU says the
// counter is invariant (constant_tsc and nonstop_tsc), so every core reads the same counter at
// the same rate; COLLIE_TSC_CLOCK=0 turns it off. Otherwise SystemClock reads steady_clock.
//
// Thread safety: now_ns() from any thread; no allocation, no lock, no system call on the fast
// path (the anchor is a seqlock; one thread at a time re-anchors, the others read on).
#include <atomic>
#include <cstdint>
#include <string_view>

namespace collie {

class TscClock {
 public:
  static constexpr int64_t kAnchorNs = 20'000'000;  // re-anchor every 20 ms of readings

  // The process's TSC clock, or nullptr where the counter cannot be trusted (see above).
  static TscClock* get();
  // Whether a machine with this clocksource (/sys/.../current_clocksource) and these CPU flags
  // (/proc/cpuinfo) has a counter the clock may use.
  static bool usable(std::string_view clocksource, std::string_view cpu_flags);

  // Measures the counter's rate against CLOCK_MONOTONIC for about a millisecond (once); when it
  // cannot (every reading interrupted), anchors() stays 0 and every reading is CLOCK_MONOTONIC's.
  TscClock();
  int64_t now_ns();

  // For tests: readings that read CLOCK_MONOTONIC (anchors included), and anchors written.
  uint64_t slow_reads() const { return slow_reads_.load(std::memory_order_relaxed); }
  uint64_t anchors() const { return anchors_.load(std::memory_order_relaxed); }

 private:
  // ns = ns + (tick - tsc) * rate for ticks within max_ticks of tsc. Two copies: a writer fills
  // the one readers are not using and then switches them over, so no reader ever waits for it.
  // A copy's seq is odd while it is written (a reader that lingered over it reads again).
  struct Anchor {
    std::atomic<uint64_t> seq{0};
    std::atomic<uint64_t> tsc{0};
    std::atomic<int64_t> ns{0};
    std::atomic<double> rate{0};
    std::atomic<int64_t> max_ticks{0};
  };
  // Writes the next anchor from a reading taken at `tick` (old: what the current anchor
  // extrapolates there; 0 = none). Only the thread holding writing_.
  int64_t write_anchor(uint64_t tick, int64_t ns, int64_t old);
  int64_t slow_now();  // CLOCK_MONOTONIC, counted

  Anchor copies_[2];
  std::atomic<int> active_{0};
  std::atomic<bool> writing_{false};
  uint64_t ref_tsc_ = 0;  // the last true reading, for the next rate (only the writer)
  int64_t ref_ns_ = 0;
  std::atomic<uint64_t> slow_reads_{0};
  std::atomic<uint64_t> anchors_{0};
};

}  // namespace collie
