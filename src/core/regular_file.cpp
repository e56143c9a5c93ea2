#include "core/regular_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace collie {
namespace {

const char* kind_of(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISDIR(m)) return "a directory";
  return "not a regular file";
}

}  // namespace

RegularFile::RegularFile(const std::string& path, uint64_t max_bytes) : path_(path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd_ < 0) {
    throw InvalidArgument(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    const std::string what = kind_of(st.st_mode);
    ::close(fd_);
    throw InvalidArgument(fmt::format("{} is {}, not a regular file; not read", path, what));
  }
  size_ = static_cast<uint64_t>(st.st_size);
  if (size_ > max_bytes) {
    ::close(fd_);
    throw InvalidArgument(
        fmt::format("{} is {} bytes, more than the {} read", path, size_, max_bytes));
  }
  buf_ = std::make_unique<Buf>(fd_, size_);
  stream_.rdbuf(buf_.get());
}

namespace {

void advise_regular_file(const std::string& path, int advice) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) (void)::posix_fadvise(fd, 0, 0, advice);
  ::close(fd);
}

}  // namespace

void prefetch_regular_file(const std::string& path) {
  advise_regular_file(path, POSIX_FADV_WILLNEED);
}

void release_regular_file(const std::string& path) {
  advise_regular_file(path, POSIX_FADV_DONTNEED);
}

bool exceeds_page_cache(uint64_t bytes) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return false;
  return bytes > static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 2;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

RegularFile::Buf::int_type RegularFile::Buf::underflow() {
  while (left_ > 0) {
    const ssize_t n =
        ::read(fd_, buf_, static_cast<size_t>(std::min<uint64_t>(left_, sizeof buf_)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // shrank under us, or an error: the stream ends here
    left_ -= static_cast<uint64_t>(n);
    setg(buf_, buf_, buf_ + n);
    return traits_type::to_int_type(buf_[0]);
  }
  left_ = 0;
  return traits_type::eof();
}

std::string RegularFile::read_all() {
  std::string out(size_, '\0');
  read_into(out.data());
  return out;
}

void RegularFile::read_into(char* dst) {
  uint64_t got = 0;
  while (got < size_) {
    const ssize_t n = ::read(fd_, dst + got, static_cast<size_t>(size_ - got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // shrank under us, or an error
    got += static_cast<uint64_t>(n);
  }
  if (got != size_) {
    throw InvalidArgument(
        fmt::format("{}: read {} of its {} bytes (did it shrink?)", path_, got, size_));
  }
}

}  // namespace collie
