#include "core/fd_limit.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <mutex>

#include "core/error.h"

namespace collie {

FdLimit raise_fd_limit() {
  static std::once_flag once;
  std::call_once(once, [] {
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
    rlimit want = lim;
    want.rlim_cur = lim.rlim_max;
    // An unlimited hard limit is not a value the kernel accepts for the soft one; its ceiling is
    // fs.nr_open (1,048,576 by default).
    if (want.rlim_cur == RLIM_INFINITY) want.rlim_cur = 1u << 20;
    setrlimit(RLIMIT_NOFILE, &want);
  });
  rlimit lim{};
  FdLimit out;
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    out.soft = lim.rlim_cur == RLIM_INFINITY ? UINT64_MAX : lim.rlim_cur;
    out.hard = lim.rlim_max == RLIM_INFINITY ? UINT64_MAX : lim.rlim_max;
  }
  return out;
}

uint64_t open_fds() {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return 0;
  uint64_t n = 0;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n > 0 ? n - 1 : 0;  // the directory's own descriptor
}

void require_fds(uint64_t more, const std::string& what) {
  const FdLimit lim = raise_fd_limit();
  const uint64_t open = open_fds();
  if (lim.soft == 0 || open + more <= lim.soft) return;
  throw InvalidArgument(fmt::format(
      "{} needs about {} open files ({} more than the {} open now) but this process may open {} "
      "(hard limit {}); raise the hard limit on this host (`ulimit -Hn`, LimitNOFILE= in the "
      "service, or the launcher's limits) to at least {}",
      what, open + more, more, open, lim.soft, lim.hard, open + more));
}

}  // namespace collie
