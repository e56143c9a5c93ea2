#include "launch/line_buffer.h"

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
  out_.append(prefix_);
  out_.append(line);
  out_.append("\n");
}

}  // namespace collie::launch
