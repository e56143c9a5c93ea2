#include "launch/output_queue.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>

namespace collie::launch {

OutputQueue::OutputQueue(int fd, size_t limit) : fd_(fd), limit_(limit) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    gone_ = true;  // closed: nothing it is given can be written
  } else if (S_ISSOCK(st.st_mode)) {
    kind_ = Kind::Socket;
  } else if (::isatty(fd)) {
    kind_ = Kind::Terminal;
  } else if (S_ISFIFO(st.st_mode)) {
    kind_ = Kind::Pipe;
  }
}

void OutputQueue::append(std::string_view bytes) {
  if (gone_) {
    dropped_ += bytes.size();
    return;
  }
  buf_.append(bytes);
}

void OutputQueue::consume(size_t n) {
  head_ += n;
  if (head_ == buf_.size()) {
    buf_.clear();
    head_ = 0;
  } else if (head_ > (size_t{1} << 20) && head_ > buf_.size() / 2) {
    buf_.erase(0, head_);
    head_ = 0;
  }
}

void OutputQueue::write_ready() {
  while (pending()) {
    size_t n = buf_.size() - head_;
    if (kind_ == Kind::Pipe || kind_ == Kind::Terminal) {
      // Linux takes a write of at most PIPE_BUF bytes into a pipe that polls writable (a terminal
      // that does has room for 256) without waiting for the reader.
      n = std::min<size_t>(n, kind_ == Kind::Pipe ? PIPE_BUF : 256);
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, 0) <= 0) return;
      if (!(p.revents & POLLOUT)) {
        if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) drop();
        return;
      }
    }
    const char* data = buf_.data() + head_;
    const ssize_t w = kind_ == Kind::Socket ? ::send(fd_, data, n, MSG_DONTWAIT | MSG_NOSIGNAL)
                                            : ::write(fd_, data, n);
    if (w > 0) {
      consume(static_cast<size_t>(w));
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // O_NONBLOCK set by another
    drop();  // EPIPE (the reader went away), EIO (a closed terminal), ...: the job goes on
    return;
  }
}

size_t OutputQueue::drop() {
  dropped_ += buf_.size() - head_;
  buf_.clear();
  buf_.shrink_to_fit();
  head_ = 0;
  gone_ = true;
  return dropped_;
}

}  // namespace collie::launch
