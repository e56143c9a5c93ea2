#pragma once
// WorkerThread: one of collie's own background threads (the watchdog, the MPI watchdog, DETAIL's
// checker, a backend's op worker, perf's step watch, the store server's event loop, the dump
// thread, the debug server's HTTP threads). start() names the new thread (core/thread_name.h, so
// `top -H`, gdb and /v1/stacks tell it apart) and runs `body` on it once; stop() calls the owner's
// `wake` (which tells the body to return: set its flag, notify its condition variable, interrupt
// its poll) and joins. The destructor stops it too, so a thread is never left running or unjoined;
// declare the member after what the body uses, or call stop() first in the owner's destructor.
// Ownership: owns the std::thread; `body` and `wake` are called with whatever they capture, which
// must outlive stop(). Thread safety: stop() is idempotent and may be called from any thread but
// the worker itself (a second concurrent caller returns once the first has joined); start() and
// running() from the owner's thread.
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace collie {

class WorkerThread {
 public:
  WorkerThread() = default;
  WorkerThread(std::string name, std::function<void()> body, std::function<void()> wake = {}) {
    start(std::move(name), std::move(body), std::move(wake));
  }
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;
  ~WorkerThread() { stop(); }

  // REQUIRES: not started yet (or stopped). `wake` may be empty when the body returns on its own
  // or the owner wakes it before stop().
  void start(std::string name, std::function<void()> body, std::function<void()> wake = {});
  // Wakes (once) and joins; returns at once when never started or already stopped.
  // REQUIRES: not called from the worker thread itself.
  void stop();
  bool running() const { return thread_.joinable(); }
  // In a process forked from the one that started the thread, the thread does not exist: drops
  // the copied handle without waking or joining, so start() may run this process's own. Takes no
  // lock (a forked child has one thread; the copied mutex may be held by a parent thread that is
  // not here). REQUIRES: called only in such a child.
  void forget_forked_copy();

 private:
  std::mutex stop_mu_;
  std::function<void()> wake_;
  std::thread thread_;
};

// The usual `wake`: sets `stop` under `mu` and notifies `cv`, for a body that waits on `cv` until
// `stop`. The three must outlive the WorkerThread's stop().
inline std::function<void()> set_and_notify(std::mutex& mu, bool& stop,
                                            std::condition_variable& cv) {
  return [&mu, &stop, &cv] {
    {
      std::lock_guard<std::mutex> lk(mu);
      stop = true;
    }
    cv.notify_all();
  };
}

}  // namespace collie
