// core/atomic_file.h: the whole file or the old one, never a half; the temporary file is hidden
// (never a rank-numbered name in a dump directory) and gone afterwards; failures are one line.
#include "core/atomic_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace collie {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct TempDir {
  TempDir() {
    char t[] = "/tmp/collie_atomic_XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
};

TEST(AtomicFile, ReplacesTheWholeFileAndLeavesNoTemporary) {
  TempDir d;
  const fs::path p = d.path / "nccl_trace_rank_3";
  write_file_atomic(p.string(), "old");
  const std::string big(1 << 20, 'x');
  write_file_atomic(p.string(), big + std::string("\0tail", 5));
  EXPECT_EQ(slurp(p), big + std::string("\0tail", 5));
  int files = 0;
  for (const auto& e : fs::directory_iterator(d.path)) {
    ++files;
    EXPECT_EQ(e.path().filename(), "nccl_trace_rank_3");
  }
  EXPECT_EQ(files, 1);
}

TEST(AtomicFile, AMissingDirectoryIsOneLineNamingTheFile) {
  TempDir d;
  const std::string p = (d.path / "no" / "such" / "r.json").string();
  try {
    write_file_atomic(p, "x");
    FAIL() << "wrote into a missing directory";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("r.json"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST(AtomicFile, AFailedRenameKeepsTheOldFileAndRemovesTheTemporary) {
  TempDir d;
  const fs::path target = d.path / "dir_in_the_way";
  fs::create_directory(target);
  fs::create_directory(target / "child");  // rename() cannot replace a non-empty directory
  EXPECT_THROW(write_file_atomic(target.string(), "x"), Error);
  EXPECT_TRUE(fs::is_directory(target / "child"));
  int files = 0;
  for (const auto& e : fs::directory_iterator(d.path)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1) << "the temporary file was left behind";
}

}  // namespace
}  // namespace collie
