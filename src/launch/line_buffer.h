#pragma once
// LineBuffer: re-assembles one child stream into whole lines and writes each line, with an
// optional prefix ("[3] "), to a file descriptor in a single write(), so lines of different
// ranks never interleave mid-line. A line longer than kMaxLine is cut into kMaxLine pieces.
// Not thread-safe (one per child stream, driven by the launcher's single loop).
#include <cstddef>
#include <string>
#include <string_view>

namespace collie::launch {

class LineBuffer {
 public:
  static constexpr size_t kMaxLine = 1 << 20;

  LineBuffer(int out_fd, std::string prefix) : fd_(out_fd), prefix_(std::move(prefix)) {}

  // Appends bytes read from the child; writes out every line completed by them.
  void feed(std::string_view data);
  // At end of stream: writes a trailing partial line, terminated with '\n'.
  void flush();

 private:
  void emit(std::string_view line);  // line without its '\n'
  int fd_;
  std::string prefix_;
  std::string pending_;
};

}  // namespace collie::launch
