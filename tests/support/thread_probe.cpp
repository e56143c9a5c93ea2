#include "support/thread_probe.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <thread>

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
  for (int i = 0; i < 200; ++i) {
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
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    const long before = wakeups(tid);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (before >= 0 && wakeups(tid) == before && state_of(tid) == 'S') return true;
  }
  return false;
}

}  // namespace collie::testing
