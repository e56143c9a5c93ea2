#include "debug_server/stacks.h"

#include <dirent.h>
#include <errno.h>
#include <execinfo.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <backward.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace collie {
namespace {

constexpr int kMaxFrames = 64;
constexpr auto kAnswerTimeout = std::chrono::milliseconds(200);
// The symbolizer keeps the process's module list; refresh it now and then for dlopen'ed code.
constexpr auto kResolverLifetime = std::chrono::seconds(10);

// The one slot the signal handler writes. Each request has a generation number, sent with the
// signal. The handler may write only after claiming the slot (armed == its generation -> 0), so
// a handler that runs late (after its request timed out) can never overwrite the answer to a
// newer request: the requester disarms the slot on timeout, or waits for a handler that already
// claimed it (it only copies return addresses, microseconds).
struct Slot {
  std::atomic<uint64_t> armed{0};
  std::atomic<uint64_t> done{0};
  void* frames[kMaxFrames];
  int depth = 0;
};
Slot g_slot;  // trivially destructible: still valid while exit handlers run

// What a capture uses besides the slot. Never destroyed: the debug server is a static destroyed
// by exit handlers, and a request it is serving may be capturing while exit handlers destroy
// statics built after it (this state is built on the first capture, after the server started),
// so a destroyed symbolizer was used (SIGSEGV in libdw at exit).
struct CaptureState {
  std::mutex mu;  // one capture at a time; guards the rest
  uint64_t generation = 0;
  std::unique_ptr<backward::TraceResolver> resolver;
  std::chrono::steady_clock::time_point built;
};

CaptureState& capture_state() {
  static CaptureState* s = new CaptureState();
  return *s;
}

void on_signal(int, siginfo_t* info, void*) {
  const int saved = errno;
  uint64_t gen = reinterpret_cast<uintptr_t>(info->si_value.sival_ptr);
  if (gen != 0 && g_slot.armed.compare_exchange_strong(gen, 0)) {
    // backtrace() is warmed up before the first signal, so it does not allocate here.
    g_slot.depth = backtrace(g_slot.frames, kMaxFrames);
    g_slot.done.store(reinterpret_cast<uintptr_t>(info->si_value.sival_ptr),
                      std::memory_order_release);
  }
  errno = saved;
}

int stack_signal() {
  static const int sig = [] {
    void* warm[2];
    backtrace(warm, 2);
    struct sigaction sa {};
    sa.sa_sigaction = on_signal;
    // Interrupted blocking calls of the target thread resume (see stacks.h for the exceptions).
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    const int s = SIGRTMIN + 7;
    sigaction(s, &sa, nullptr);
    return s;
  }();
  return sig;
}

// Queues the stack signal to one thread with the request's generation as its value.
bool signal_thread(pid_t pid, long tid, int sig, uint64_t gen) {
  siginfo_t si{};
  si.si_signo = sig;
  si.si_code = SI_QUEUE;
  si.si_pid = pid;
  si.si_uid = getuid();
  si.si_value.sival_ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(gen));
  return syscall(SYS_rt_tgsigqueueinfo, pid, tid, sig, &si) == 0;
}

// Asks thread `tid` for its return addresses; false when it did not answer in time.
// REQUIRES: capture_state().mu held.
bool ask_thread(pid_t pid, long tid, int sig, void** frames, int* depth, std::string* error) {
  const uint64_t gen = ++capture_state().generation;
  g_slot.armed.store(gen);
  if (!signal_thread(pid, tid, sig, gen)) {
    g_slot.armed.store(0);
    *error = "thread exited before it could be signalled";
    return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + kAnswerTimeout;
  while (g_slot.done.load(std::memory_order_acquire) != gen) {
    if (std::chrono::steady_clock::now() >= deadline) {
      uint64_t expected = gen;
      if (g_slot.armed.compare_exchange_strong(expected, 0)) {
        *error = "no answer within 200 ms (signal blocked or thread stopped)";
        return false;  // the handler, if it ever runs, finds the slot disarmed
      }
      // The handler claimed the slot just now and is copying addresses: let it finish.
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  *depth = g_slot.depth;
  std::copy(g_slot.frames, g_slot.frames + *depth, frames);
  return true;
}

std::string thread_name(long tid) {
  std::ifstream f(fmt::format("/proc/self/task/{}/comm", tid));
  std::string name;
  std::getline(f, name);
  return name;
}

// REQUIRES: capture_state().mu held.
backward::TraceResolver& resolver() {
  CaptureState& st = capture_state();
  const auto now = std::chrono::steady_clock::now();
  if (!st.resolver || now - st.built > kResolverLifetime) {
    st.resolver = std::make_unique<backward::TraceResolver>();
    st.built = now;
  }
  return *st.resolver;
}

nlohmann::json symbolize(void* const* frames, int depth, int skip, int max_frames) {
  backward::TraceResolver& res = resolver();
  res.load_addresses(frames, depth);
  nlohmann::json out = nlohmann::json::array();
  for (int i = skip; i < depth && static_cast<int>(out.size()) < max_frames; ++i) {
    backward::ResolvedTrace t = res.resolve(backward::ResolvedTrace(backward::Trace(frames[i], i)));
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
  std::lock_guard<std::mutex> lock(capture_state().mu);
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
      std::string error;
      if (!ask_thread(pid, tid, sig, frames, &depth, &error)) {
        t["error"] = error;
        threads.push_back(std::move(t));
        continue;
      }
    }
    // Skip the handler and signal trampoline frames (or this function for the calling thread).
    t["frames"] = symbolize(frames, depth, tid == self ? 1 : 2, max_frames);
    threads.push_back(std::move(t));
  }
  return threads;
}

}  // namespace collie
