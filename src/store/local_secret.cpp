#include "store/local_secret.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "store/store_secret.h"

namespace collie {
namespace {

std::string secret_path(const std::string& dir, uint16_t port) {
  return fmt::format("{}/store-{}.secret", dir, port);
}

// A folder (not a symlink) of this user that nobody else may enter.
bool safe_dir(const std::string& dir, std::string* why) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) {
    if (why) *why = fmt::format("{}: {}", dir, std::strerror(errno));
    return false;
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077) != 0) {
    if (why) *why = fmt::format("{} is not a folder of this user with mode 0700", dir);
    return false;
  }
  return true;
}

}  // namespace

std::string local_secret_dir(std::string* why) {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  const std::string dir = runtime != nullptr && runtime[0] == '/'
                              ? std::string(runtime) + "/collie"
                              : fmt::format("/tmp/collie-{}", getuid());
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    if (why) *why = fmt::format("{}: {}", dir, std::strerror(errno));
    return "";
  }
  return safe_dir(dir, why) ? dir : "";
}

LocalSecretFile::LocalSecretFile(uint16_t port, const std::string& secret) {
  const std::string dir = local_secret_dir(&why_);
  if (dir.empty()) return;
  const std::string path = secret_path(dir, port);
  unlink(path.c_str());  // a file left by a launcher that was killed
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    why_ = fmt::format("{}: {}", path, std::strerror(errno));
    return;
  }
  const bool written =
      write(fd, secret.data(), secret.size()) == static_cast<ssize_t>(secret.size());
  const int err = errno;
  close(fd);
  if (!written) {
    why_ = fmt::format("{}: {}", path, std::strerror(err));
    unlink(path.c_str());
    return;
  }
  path_ = path;
}

LocalSecretFile::~LocalSecretFile() {
  if (!path_.empty()) unlink(path_.c_str());
}

std::string read_local_secret(uint16_t port) {
  const std::string dir = local_secret_dir();
  if (dir.empty()) return "";
  const int fd =
      open(secret_path(dir, port).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st {};
  std::string out;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() &&
      (st.st_mode & 077) == 0 && st.st_size > 0 &&
      static_cast<size_t>(st.st_size) <= kMaxStoreSecretBytes) {
    out.resize(static_cast<size_t>(st.st_size));
    if (pread(fd, out.data(), out.size(), 0) != static_cast<ssize_t>(out.size())) out.clear();
  }
  close(fd);
  return out;
}

}  // namespace collie
