#include "support/thread_probe.h"

#include <fmt/format.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "support/time_scale.h"

namespace collie::testing {

std::set<int> threads_named(const std::string& name) {
  std::set<int> tids;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream f(e.path() / "comm");
    std::string comm;
    std::getline(f, comm);
    if (comm == name) tids.insert(std::stoi(e.path().filename().string()));
  }
  return tids;
}

int new_thread(const std::string& name, const std::set<int>& before) {
  for (int i = 0; i < 200 * kTimeScale; ++i) {
    for (int tid : threads_named(name)) {
      if (!before.count(tid)) return tid;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
}

long wakeups(int tid) {
  std::ifstream f(fmt::format("/proc/self/task/{}/status", tid));
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("voluntary_ctxt_switches:", 0) == 0) return std::stol(line.substr(24));
  }
  return -1;
}

long wakeups_over(int tid, std::chrono::milliseconds d) {
  const long before = wakeups(tid);
  std::this_thread::sleep_for(d);
  return wakeups(tid) - before;
}

namespace {

char state_of(int tid) {
  std::ifstream f(fmt::format("/proc/self/task/{}/stat", tid));
  std::string stat;
  std::getline(f, stat);
  const auto close = stat.rfind(')');  // the name may hold spaces and parentheses
  return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
}

}  // namespace

bool settled(int tid, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + scaled(limit);
  while (std::chrono::steady_clock::now() < end) {
    const long before = wakeups(tid);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (before >= 0 && wakeups(tid) == before && state_of(tid) == 'S') return true;
  }
  return false;
}

namespace {

// The id `tid` holds once its thread published it (>= 0), or -1 after `limit` (scaled).
int published(const std::atomic<int>& tid, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + scaled(limit);
  while (tid.load() < 0 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return tid.load();
}

}  // namespace

bool settled(const std::atomic<int>& tid, std::chrono::milliseconds limit) {
  const int id = published(tid, limit);
  return id >= 0 && settled(id, limit);
}

bool asleep(int tid, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + scaled(limit);
  int in_a_row = 0;
  while (std::chrono::steady_clock::now() < end) {
    in_a_row = state_of(tid) == 'S' ? in_a_row + 1 : 0;
    if (in_a_row == 5) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

bool asleep(const std::atomic<int>& tid, std::chrono::milliseconds limit) {
  const int id = published(tid, limit);
  return id >= 0 && asleep(id, limit);
}

int current_tid() { return static_cast<int>(::syscall(SYS_gettid)); }

}  // namespace collie::testing
