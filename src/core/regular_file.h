#pragma once
// Reading a file found in a folder others can write (a shared COLLIE_FR_DUMP_DIR), so that
// nothing planted under its name can block or flood the reader: only a regular file is opened
// (the open itself never blocks, so a FIFO, device or socket is refused at once), one larger
// than max_bytes is refused, and reads stop at the size the file had when it was opened (a file
// that keeps growing, or a /proc file that says it is empty, cannot keep a reader going).
// Not thread-safe; one reader per instance.
#include <cstdint>
#include <istream>
#include <memory>
#include <streambuf>
#include <string>

namespace collie {

class RegularFile {
 public:
  // Throws InvalidArgument, one line naming the path: cannot be opened, is not a regular file
  // (naming what it is), or is larger than max_bytes.
  RegularFile(const std::string& path, uint64_t max_bytes);
  ~RegularFile();
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;

  uint64_t size() const { return size_; }
  // The file's first size() bytes as a stream (read as they are parsed, never held whole).
  std::istream& stream() { return stream_; }
  // The file's first size() bytes. Throws InvalidArgument when fewer can be read.
  std::string read_all();
  // The file's first size() bytes into dst, which has room for at least size() bytes, read
  // straight from the file (no copy through a stream buffer): a reader that needs its own
  // buffer (a parser's padding) reads each byte once. Precondition: stream() was not read from.
  // Throws InvalidArgument when fewer can be read.
  void read_into(char* dst);

 private:
  class Buf : public std::streambuf {
   public:
    Buf(int fd, uint64_t limit) : fd_(fd), left_(limit) {}

   protected:
    int_type underflow() override;

   private:
    int fd_;
    uint64_t left_;
    char buf_[65536];
  };
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::unique_ptr<Buf> buf_;
  std::istream stream_{nullptr};
};

// Asks the kernel to start reading `path` into the page cache now (posix_fadvise WILLNEED), so
// a RegularFile read of it later does not wait on the disk: a reader of many files names the
// next ones while it parses this one. Best effort: anything but a regular file, or any error,
// does nothing. Never blocks on a FIFO (opened as RegularFile opens). Thread-safe.
void prefetch_regular_file(const std::string& path);
// The other end: tells the kernel this reader is done with `path` (posix_fadvise DONTNEED), so
// its clean pages leave the page cache now instead of being reclaimed later, when a reader of
// more files than memory holds needs room (each read would otherwise wait for that reclaim).
// Best effort, as prefetch_regular_file. Thread-safe.
void release_regular_file(const std::string& path);
// Whether `bytes` of files is more than half of this machine's physical memory: a reader of that
// much keeps nothing of it cached for long anyway, so releasing each file after reading it costs
// a later reader nothing.
bool exceeds_page_cache(uint64_t bytes);

}  // namespace collie
