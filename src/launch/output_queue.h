#pragma once
// OutputQueue: what the launcher writes to one of its outputs (its stdout, its stderr, or both when
// they are one file), queued so that its single event loop never blocks on whoever reads them:
// --timeout and signals keep working when nobody reads (`collie launch ... | sleep 1000`).
// write_ready() writes only what the descriptor takes at once, without setting O_NONBLOCK on a
// descriptor other processes share: a socket through send(MSG_DONTWAIT), a pipe or FIFO at most
// PIPE_BUF bytes per write(2) and a terminal at most 256, each only after poll(2) says it is
// writable (Linux then never blocks such a write), a regular file or another device directly.
// Nothing is dropped while the reader is merely slow: above `limit` queued bytes full() asks the
// launcher to stop reading the ranks' pipes, so a rank that keeps printing blocks in its own
// write, as it would writing to the reader itself. Output is dropped only when the reader went
// away (EPIPE, an error) or when the launcher gives up on it to exit (drop()).
// Not thread-safe; driven by the launcher's loop.
#include <cstddef>
#include <string>
#include <string_view>

namespace collie::launch {

class OutputQueue {
 public:
  static constexpr size_t kDefaultLimit = size_t{4} << 20;

  // `fd` stays the caller's (not closed).
  explicit OutputQueue(int fd, size_t limit = kDefaultLimit);
  OutputQueue(const OutputQueue&) = delete;
  OutputQueue& operator=(const OutputQueue&) = delete;

  int fd() const { return fd_; }
  // Queues bytes (always accepted; dropped at once after drop() or once the reader is gone).
  void append(std::string_view bytes);
  bool pending() const { return head_ < buf_.size(); }
  bool full() const { return buf_.size() - head_ >= limit_; }
  // Writes what the descriptor takes now, never blocking.
  void write_ready();
  // Discards what is queued and everything appended later; returns the bytes discarded so far.
  size_t drop();
  size_t dropped() const { return dropped_; }

 private:
  enum class Kind { Direct, Socket, Pipe, Terminal };
  void consume(size_t n);
  int fd_;
  size_t limit_;
  Kind kind_ = Kind::Direct;
  bool gone_ = false;  // dropped, or the reader went away
  std::string buf_;
  size_t head_ = 0;  // bytes of buf_ already written
  size_t dropped_ = 0;
};

}  // namespace collie::launch
