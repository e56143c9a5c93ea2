#include "launch/cpu_binding.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sched.h>

#include "core/error.h"
#include "core/printable.h"

namespace collie::launch {

Binding parse_binding(const std::string& text) {
  if (text == "auto") return Binding::Auto;
  if (text == "none") return Binding::None;
  throw InvalidArgument(fmt::format("--bind {} is not auto or none", quote(text)));
}

const char* binding_name(Binding b) { return b == Binding::Auto ? "auto" : "none"; }

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {};
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

std::vector<std::vector<int>> rank_cpus(int nprocs, const std::vector<int>& cpus, Binding b) {
  std::vector<std::vector<int>> out(static_cast<size_t>(nprocs));
  if (b == Binding::None || cpus.empty()) return out;
  const int n = static_cast<int>(cpus.size());
  if (nprocs > n) {
    for (int r = 0; r < nprocs; ++r) out[r] = {cpus[r % n]};
    return out;
  }
  const int share = n / nprocs, extra = n % nprocs;
  int next = 0;
  for (int r = 0; r < nprocs; ++r) {
    const int take = share + (r < extra ? 1 : 0);
    out[r].assign(cpus.begin() + next, cpus.begin() + next + take);
    next += take;
  }
  return out;
}

std::string describe_binding(const std::vector<std::vector<int>>& sets, int cpus) {
  if (sets.empty() || sets.front().empty()) return "";
  std::string s;
  if (sets.size() > 8) {
    s = fmt::format("{} ranks, {} CPU(s) each", sets.size(), sets.front().size());
  } else {
    for (size_t r = 0; r < sets.size(); ++r) {
      if (r > 0) s += "; ";
      s += fmt::format("rank {} on CPU {}", r, fmt::join(sets[r], ","));
    }
  }
  if (static_cast<int>(sets.size()) > cpus)
    s += fmt::format(" ({} ranks on {} CPUs take turns)", sets.size(), cpus);
  return s;
}

}  // namespace collie::launch
