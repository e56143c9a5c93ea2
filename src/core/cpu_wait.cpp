#include "core/cpu_wait.h"

#include <filesystem>
#include <fstream>

namespace collie {

double process_cpu_wait_seconds() {
  std::error_code ec;
  double total = 0;
  bool any = false;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream in(task.path() / "schedstat");
    unsigned long long run_ns = 0, wait_ns = 0;
    if (!(in >> run_ns >> wait_ns)) continue;  // a thread that ended meanwhile
    total += static_cast<double>(wait_ns) / 1e9;
    any = true;
  }
  return any ? total : -1;
}

}  // namespace collie
