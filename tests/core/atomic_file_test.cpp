// core/atomic_file.h: the whole file or the old one, never a half; the temporary file is hidden
// (never a rank-numbered name in a dump directory) and gone afterwards; failures are one line.
#include "core/atomic_file.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

// The temporary names a write tries, in order, through the test seam: the first is taken by
// what a test planted, so the write must refuse it and go on to the second.
constexpr const char* kPlantedTag = "00000000000000aa";
constexpr const char* kFreeTag = "00000000000000bb";
int tags_given = 0;
std::string planted_then_free() { return tags_given++ == 0 ? kPlantedTag : kFreeTag; }

struct PlantedTags {
  PlantedTags() {
    tags_given = 0;
    testing::set_temporary_tag_source(&planted_then_free);
  }
  ~PlantedTags() { testing::set_temporary_tag_source(nullptr); }
  static fs::path name(const fs::path& target, const char* tag) {
    return target.parent_path() / fmt::format(".{}.{}.tmp", target.filename().string(), tag);
  }
};

// A shared dump or results folder (issue 27): someone else planted a symlink to their file
// under the temporary name the write tries first. The write must neither follow it into the
// victim file nor leave the victim changed; it takes another name and the target gets the bytes.
TEST(AtomicFile, APlantedSymlinkAtTheTemporaryNameIsNeverWrittenThrough) {
  TempDir d;
  const fs::path victim = d.path / "victim";
  { std::ofstream(victim) << "precious"; }
  const fs::path target = d.path / "collie_fr_rank_0.json";
  PlantedTags tags;
  fs::create_symlink(victim, PlantedTags::name(target, kPlantedTag));
  write_file_atomic(target.string(), "dump");
  EXPECT_EQ(tags_given, 2) << "the planted name was not tried first, or not refused";
  EXPECT_EQ(slurp(victim), "precious");
  EXPECT_EQ(slurp(target), "dump");
  EXPECT_FALSE(fs::is_symlink(target));
  EXPECT_TRUE(fs::is_symlink(PlantedTags::name(target, kPlantedTag))) << "the plant was removed";
  EXPECT_FALSE(fs::exists(PlantedTags::name(target, kFreeTag))) << "the temporary was left";
}

// A FIFO under the temporary name made the writer block forever in open(); the write runs in a
// child with an alarm so a regression fails instead of hanging the suite.
TEST(AtomicFile, APlantedFifoAtTheTemporaryNameDoesNotBlockTheWriter) {
  TempDir d;
  const fs::path target = d.path / "results.json";
  PlantedTags tags;
  ASSERT_EQ(::mkfifo(PlantedTags::name(target, kPlantedTag).c_str(), 0666), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::alarm(5);
    try {
      write_file_atomic(target.string(), "r");
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(tags_given == 2 ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the writer was killed (blocked on the FIFO), signal "
                                 << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: the write failed; 3: the FIFO's name was not tried";
  EXPECT_EQ(slurp(target), "r");
}

// A symlink planted at the target itself is replaced, not followed.
TEST(AtomicFile, ASymlinkAtTheTargetIsReplacedNotFollowed) {
  TempDir d;
  const fs::path victim = d.path / "victim";
  { std::ofstream(victim) << "precious"; }
  const fs::path target = d.path / "out.json";
  fs::create_symlink(victim, target);
  write_file_atomic(target.string(), "new");
  EXPECT_EQ(slurp(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(target));
  EXPECT_EQ(slurp(target), "new");
}

// The file gets the mode any newly created file gets (0666 & ~umask), not mkstemp's 0600:
// other ranks' users and tools read shared dumps.
TEST(AtomicFile, TheFileHasTheUsualMode) {
  TempDir d;
  const fs::path target = d.path / "r.json";
  const mode_t old = ::umask(022);
  write_file_atomic(target.string(), "x");
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

}  // namespace
}  // namespace collie
