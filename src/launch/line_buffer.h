#pragma once
// LineBuffer: re-assembles one child stream into whole lines and queues each line, with an
// optional prefix ("[3] "), on the launcher's output (output_queue.h) in one piece, so lines of
// different ranks never interleave mid-line. A line longer than kMaxLine is cut into kMaxLine
// pieces. Not thread-safe (one per child stream, driven by the launcher's single loop).
#include <cstddef>
#include <string>
#include <string_view>

#include "launch/output_queue.h"

namespace collie::launch {

class LineBuffer {
 public:
  static constexpr size_t kMaxLine = 1 << 20;

  // `out` must outlive this.
  LineBuffer(OutputQueue& out, std::string prefix) : out_(out), prefix_(std::move(prefix)) {}

  // Appends bytes read from the child; queues every line completed by them.
  void feed(std::string_view data);
  // At end of stream: queues a trailing partial line, terminated with '\n'.
  void flush();

 private:
  void emit(std::string_view line);  // line without its '\n'
  OutputQueue& out_;
  std::string prefix_;
  std::string pending_;
};

}  // namespace collie::launch
