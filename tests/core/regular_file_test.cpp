// core/regular_file.h: what is planted under a file's name in a shared folder cannot block or
// flood the reader.
#include "core/regular_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

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

}  // namespace
}  // namespace collie
