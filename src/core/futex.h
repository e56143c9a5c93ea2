#pragma once
// Sleeping on a 32-bit atomic word and waking its sleepers: Linux futexes, process-private.
// A Work waits on its state word with these instead of a mutex and a condition variable, so a
// Work nobody waits on costs no lock, and destroying one costs no locked instruction.
// Thread safety: any thread may call either at any time; the word must outlive both calls.
#include <atomic>
#include <chrono>
#include <cstdint>

namespace collie {

// Sleeps while `word` holds `expected`, for at most `timeout` (<= 0: returns at once). Returns
// when woken, when the word differs, when the time is up or on a signal: the caller re-reads
// the word and decides (a spurious return is possible).
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, std::chrono::nanoseconds timeout);

// Wakes every thread sleeping in futex_wait on `word`.
void futex_wake_all(std::atomic<uint32_t>& word);

}  // namespace collie
