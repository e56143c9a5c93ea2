#pragma once
// Finds this process's threads by the names they give themselves (core/thread_name.h) and counts
// how often one woke: the kernel's voluntary context switches of the thread (each sleep that ends
// is one). For tests that show a background thread sleeps until there is work, not on a tick.
// Linux only (/proc/self/task). Thread-safe (reads /proc only).
#include <atomic>
#include <chrono>
#include <set>
#include <string>

namespace collie::testing {

// The thread ids of this process whose name is exactly `name`.
std::set<int> threads_named(const std::string& name);

// The thread named `name` that is not in `before`; waits up to 1 s (scaled with the build,
// support/time_scale.h) for it to name itself.
// -1 when none appeared.
int new_thread(const std::string& name, const std::set<int>& before);

// The thread's voluntary context switches so far; -1 when the thread is gone.
long wakeups(int tid);

// The thread's wakeups over the next `d` (the caller sleeps for `d`).
long wakeups_over(int tid, std::chrono::milliseconds d);

// Waits until the thread has settled into a sleep: its wakeup count stays the same over 50 ms
// and it is sleeping (state S) at the end of them. On a loaded machine a new thread may take a
// while to reach its first wait; count from here, not from its start. False after `limit`
// (scaled with the build). The way to know "the thread is parked in its wait by now", never a
// fixed sleep.
bool settled(int tid, std::chrono::milliseconds limit = std::chrono::milliseconds(3000));
// The same for a thread the test started, which publishes current_tid() in `tid` (initially -1)
// before it blocks: waits for the id, then for the thread to settle.
bool settled(const std::atomic<int>& tid,
             std::chrono::milliseconds limit = std::chrono::milliseconds(3000));

// A weaker settled() for waits that poll (FileStore's wait wakes every <= 50 ms to read the
// file): the thread is sleeping (state S) in 5 samples 10 ms apart. Use settled() where the wait
// does not poll. False after `limit` (scaled).
bool asleep(int tid, std::chrono::milliseconds limit = std::chrono::milliseconds(3000));
bool asleep(const std::atomic<int>& tid,
            std::chrono::milliseconds limit = std::chrono::milliseconds(3000));

// The calling thread's kernel thread id (what /proc/self/task lists).
int current_tid();

}  // namespace collie::testing
