#include "debug_server/stacks.h"

#include <dirent.h>
#include <execinfo.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <backward.hpp>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

namespace collie {
namespace {

constexpr int kMaxFrames = 64;

// The one slot the signal handler writes; guarded by g_capture_mu between captures.
struct Slot {
  std::atomic<int> done{0};
  void* frames[kMaxFrames];
  int depth = 0;
};
Slot g_slot;
std::mutex g_capture_mu;

void on_signal(int) {
  // backtrace() is warmed up before the first signal, so it does not allocate here.
  g_slot.depth = backtrace(g_slot.frames, kMaxFrames);
  g_slot.done.store(1, std::memory_order_release);
}

int stack_signal() {
  static const int sig = [] {
    void* warm[2];
    backtrace(warm, 2);
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    const int s = SIGRTMIN + 7;
    sigaction(s, &sa, nullptr);
    return s;
  }();
  return sig;
}

std::string thread_name(long tid) {
  std::ifstream f(fmt::format("/proc/self/task/{}/comm", tid));
  std::string name;
  std::getline(f, name);
  return name;
}

nlohmann::json symbolize(void* const* frames, int depth, int skip, int max_frames) {
  backward::TraceResolver resolver;
  resolver.load_addresses(frames, depth);
  nlohmann::json out = nlohmann::json::array();
  for (int i = skip; i < depth && static_cast<int>(out.size()) < max_frames; ++i) {
    backward::ResolvedTrace t =
        resolver.resolve(backward::ResolvedTrace(backward::Trace(frames[i], i)));
    std::string fn = t.source.function.empty() ? t.object_function : t.source.function;
    if (fn.empty()) fn = fmt::format("{}", frames[i]);
    std::string line = fmt::format("#{} {}", out.size(), fn);
    if (!t.source.filename.empty())
      line += fmt::format(" at {}:{}", t.source.filename, t.source.line);
    if (!t.object_filename.empty()) line += fmt::format(" [{}]", t.object_filename);
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace

nlohmann::json capture_all_stacks(int max_frames) {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  const int sig = stack_signal();
  const pid_t pid = getpid();
  const long self = syscall(SYS_gettid);
  std::vector<long> tids;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') tids.push_back(std::atol(e->d_name));
    }
    closedir(d);
  }
  nlohmann::json threads = nlohmann::json::array();
  for (long tid : tids) {
    nlohmann::json t = {{"tid", tid}, {"name", thread_name(tid)}};
    void* frames[kMaxFrames];
    int depth = 0;
    if (tid == self) {
      depth = backtrace(frames, kMaxFrames);
    } else {
      g_slot.done.store(0, std::memory_order_release);
      if (syscall(SYS_tgkill, pid, tid, sig) != 0) {
        t["error"] = "thread exited before it could be signalled";
        threads.push_back(std::move(t));
        continue;
      }
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
      while (g_slot.done.load(std::memory_order_acquire) == 0 &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      if (g_slot.done.load(std::memory_order_acquire) == 0) {
        // The handler may still run later; it only writes the slot, which the next capture
        // resets before signalling.
        t["error"] = "no answer within 200 ms (signal blocked or thread stopped)";
        threads.push_back(std::move(t));
        continue;
      }
      depth = g_slot.depth;
      std::copy(g_slot.frames, g_slot.frames + depth, frames);
    }
    // Skip the handler and signal trampoline frames (or this function for the calling thread).
    t["frames"] = symbolize(frames, depth, tid == self ? 1 : 2, max_frames);
    threads.push_back(std::move(t));
  }
  return threads;
}

}  // namespace collie
