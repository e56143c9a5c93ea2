// core/regular_file.h: what is planted under a file's name in a shared folder cannot block or
// flood the reader.
#include "core/regular_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "core/error.h"

namespace collie {
namespace {

namespace fs = std::filesystem;

struct Dir {
  fs::path path = fs::temp_directory_path() / ("collie_regular_" + std::to_string(::getpid()));
  Dir() { fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
};

std::string refusal(const std::string& path, uint64_t max) {
  try {
    RegularFile f(path, max);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "opened";
}

TEST(RegularFile, FifosDevicesAndDirectoriesAreRefusedWithoutBlocking) {
  Dir d;
  const std::string fifo = (d.path / "collie_fr_rank_0.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_EQ(refusal(fifo, 100), fifo + " is a FIFO, not a regular file; not read");
  EXPECT_EQ(refusal("/dev/zero", 100),
            "/dev/zero is a character device, not a regular file; not read");
  EXPECT_NE(refusal(d.path.string(), 100).find("a directory"), std::string::npos);
  EXPECT_NE(refusal((d.path / "missing").string(), 100).find("cannot open"), std::string::npos);
}

TEST(RegularFile, SizeIsCappedAndReadsStopAtTheSizeWhenOpened) {
  Dir d;
  const fs::path p = d.path / "dump";
  { std::ofstream(p) << "0123456789"; }
  EXPECT_NE(refusal(p.string(), 9).find("is 10 bytes, more than the 9 read"), std::string::npos);
  RegularFile f(p.string(), 10);
  { std::ofstream(p, std::ios::app) << "grown after it was opened"; }
  std::stringstream all;
  all << f.stream().rdbuf();
  EXPECT_EQ(all.str(), "0123456789");
  RegularFile g(p.string(), 100);
  EXPECT_EQ(g.read_all().size(), g.size());
}

TEST(RegularFile, ReadIntoFillsTheCallersBufferWithTheSizeWhenOpenedAndRefusesAShrunkFile) {
  Dir d;
  const fs::path p = d.path / "dump";
  { std::ofstream(p) << "0123456789"; }
  RegularFile f(p.string(), 100);
  { std::ofstream(p, std::ios::app) << "grown after it was opened"; }
  std::string buf(16, '#');
  f.read_into(buf.data());
  EXPECT_EQ(buf, "0123456789######");  // nothing past size() is written

  RegularFile g(p.string(), 100);
  ASSERT_EQ(::truncate(p.c_str(), 4), 0);
  std::string small(g.size(), '\0');
  try {
    g.read_into(small.data());
    ADD_FAILURE() << "a file that shrank after it was opened was read as whole";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("read 4 of its 35 bytes (did it shrink?)"),
              std::string::npos)
        << e.what();
  }
}

// Pages of `path` in the page cache (mincore over a mapping of it), of `pages`.
size_t resident_pages(const std::string& path, size_t& pages) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  ::fstat(fd, &st);
  const size_t len = static_cast<size_t>(st.st_size);
  void* m = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  pages = (len + page - 1) / page;
  std::vector<unsigned char> in(pages);
  size_t n = 0;
  if (m != MAP_FAILED && ::mincore(m, len, in.data()) == 0) {
    for (unsigned char c : in) n += c & 1;
  }
  if (m != MAP_FAILED) ::munmap(m, len);
  return n;
}

TEST(RegularFile, PrefetchAndReleaseMoveAFileIntoAndOutOfThePageCacheAndLeaveAnythingElseAlone) {
  Dir d;
  // Nothing else is opened in a way that blocks, and nothing throws.
  const std::string fifo = (d.path / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  prefetch_regular_file(fifo);  // no writer: a blocking open would hang here
  prefetch_regular_file("/dev/zero");
  prefetch_regular_file(d.path.string());
  prefetch_regular_file((d.path / "missing").string());
  // A regular file's pages come into the page cache.
  const std::string file = (d.path / "collie_fr_rank_0.json").string();
  {
    std::ofstream out(file);
    out << std::string(4 << 20, 'x');
  }
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::fsync(fd), 0);  // clean pages, which the kernel can drop
  ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  ::close(fd);
  size_t pages = 0;
  if (resident_pages(file, pages) > pages / 2) {
    GTEST_SKIP() << "the file system under " << d.path
                 << " keeps a file's pages cached (tmpfs?), so read-ahead cannot be seen";
  }
  prefetch_regular_file(file);
  size_t resident = 0;
  for (int i = 0; i < 500 && resident < pages; ++i) {  // up to 5 s on a busy disk
    resident = resident_pages(file, pages);
    if (resident < pages) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(resident, pages) << "read ahead: " << resident << " of " << pages << " pages cached";
  RegularFile f(file, 8 << 20);
  EXPECT_EQ(f.read_all(), std::string(4 << 20, 'x'));
  // Released, its clean pages leave the cache; the file is unchanged.
  release_regular_file(file);
  EXPECT_LE(resident_pages(file, pages), pages / 8) << "released pages are still cached";
  RegularFile again(file, 8 << 20);
  EXPECT_EQ(again.read_all(), std::string(4 << 20, 'x'));
  release_regular_file(fifo);  // as prefetch: nothing but a regular file is touched
  release_regular_file("/dev/zero");
}

// A reader releases what it read only where the files are more than half of memory.
TEST(RegularFile, OnlyFilesLargerThanHalfOfMemoryExceedThePageCache) {
  const uint64_t memory = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                          static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_FALSE(exceeds_page_cache(0));
  EXPECT_FALSE(exceeds_page_cache(memory / 2));
  EXPECT_TRUE(exceeds_page_cache(memory / 2 + 1));
  EXPECT_TRUE(exceeds_page_cache(memory * 4));
}

}  // namespace
}  // namespace collie
