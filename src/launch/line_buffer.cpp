#include "launch/line_buffer.h"

#include <unistd.h>

#include <cerrno>

namespace collie::launch {

void LineBuffer::feed(std::string_view data) {
  pending_.append(data);
  size_t start = 0;
  for (;;) {
    const size_t nl = pending_.find('\n', start);
    if (nl == std::string::npos) break;
    emit(std::string_view(pending_).substr(start, nl - start));
    start = nl + 1;
  }
  while (pending_.size() - start >= kMaxLine) {
    emit(std::string_view(pending_).substr(start, kMaxLine));
    start += kMaxLine;
  }
  pending_.erase(0, start);
}

void LineBuffer::flush() {
  if (!pending_.empty()) emit(pending_);
  pending_.clear();
}

void LineBuffer::emit(std::string_view line) {
  std::string out;
  out.reserve(prefix_.size() + line.size() + 1);
  out.append(prefix_).append(line).push_back('\n');
  size_t off = 0;
  while (off < out.size()) {
    const ssize_t n = write(fd_, out.data() + off, out.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // the reader went away (closed pipe); the job itself goes on
    }
    off += static_cast<size_t>(n);
  }
}

}  // namespace collie::launch
