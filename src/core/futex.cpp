#include "core/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace collie {
namespace {
// The kernel reads the word's 4 bytes; std::atomic<uint32_t> is exactly those (checked here).
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
              std::atomic<uint32_t>::is_always_lock_free);
uint32_t* address(std::atomic<uint32_t>& word) { return reinterpret_cast<uint32_t*>(&word); }
}  // namespace

void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, std::chrono::nanoseconds timeout) {
  if (timeout.count() <= 0) return;
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(s.count());
  ts.tv_nsec = static_cast<long>((timeout - s).count());
  // A relative timeout on CLOCK_MONOTONIC; EAGAIN (the word differs), EINTR and ETIMEDOUT all
  // mean "look again", which the caller does.
  syscall(SYS_futex, address(word), FUTEX_WAIT_PRIVATE, expected, &ts, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, address(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace collie
