#include "core/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace collie {
namespace {

// 16 hex characters from getrandom(2): a name nobody can plant a file, link or FIFO under
// ahead of time, unlike one derived from the pid.
testing::TemporaryTagSource tag_source = nullptr;

std::string random_tag() {
  if (tag_source != nullptr) return tag_source();
  uint64_t r = 0;
  size_t got = 0;
  while (got < sizeof r) {
    const ssize_t n = ::getrandom(reinterpret_cast<char*>(&r) + got, sizeof r - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(fmt::format("getrandom failed: {}", std::strerror(errno)));
    got += static_cast<size_t>(n);
  }
  return fmt::format("{:016x}", r);
}

// Creates a fresh temporary file beside `target` and returns its descriptor. O_EXCL makes
// open() fail on anything already there (a file, a FIFO, a symlink, even a dangling one), so the
// bytes only ever go into a regular file this call created; a name that is taken (planted, or
// another writer's) is retried under a new random name.
int create_temporary(const std::filesystem::path& target, std::filesystem::path* tmp) {
  constexpr int kTries = 16;
  int last_errno = 0;
  for (int i = 0; i < kTries; ++i) {
    *tmp =
        target.parent_path() / fmt::format(".{}.{}.tmp", target.filename().string(), random_tag());
    const int fd = ::open(tmp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    last_errno = errno;
    if (errno != EEXIST) break;
  }
  throw Error(fmt::format("cannot write {} ({}; check the directory exists and is writable)",
                          tmp->string(), std::strerror(last_errno)));
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  fs::path tmp;
  const int fd = create_temporary(target, &tmp);
  const bool written = write_all(fd, bytes);
  const int write_errno = errno;
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    const int err = !written ? write_errno : errno;
    ::unlink(tmp.c_str());
    throw Error(
        fmt::format("writing {} failed ({}; disk full?)", tmp.string(), std::strerror(err)));
  }
  // rename() replaces the name `path` itself: a symlink planted there is replaced, never
  // followed.
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    ::unlink(tmp.c_str());
    throw Error(fmt::format("cannot rename {} to {}: {}", tmp.string(), path, ec.message()));
  }
}

bool link_file_atomic(const std::string& existing, const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  for (int i = 0; i < 16; ++i) {
    const fs::path tmp =
        target.parent_path() / fmt::format(".{}.{}.tmp", target.filename().string(), random_tag());
    if (::link(existing.c_str(), tmp.c_str()) != 0) {
      if (errno == EEXIST) continue;
      return false;
    }
    std::error_code ec;
    fs::rename(tmp, target, ec);
    if (!ec) return true;
    ::unlink(tmp.c_str());
    return false;
  }
  return false;
}

namespace testing {
void set_temporary_tag_source(TemporaryTagSource source) { tag_source = source; }
}  // namespace testing

}  // namespace collie
