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

// A shared dump or results folder (issue 27): someone else planted symlinks under every name
// a pid-derived temporary could take. The write must neither follow them into the victim file
// nor leave the victim changed; the target gets the bytes.
TEST(AtomicFile, PlantedSymlinksForTemporaryNamesAreNeverWrittenThrough) {
  TempDir d;
  const fs::path victim = d.path / "victim";
  { std::ofstream(victim) << "precious"; }
  const fs::path target = d.path / "collie_fr_rank_0.json";
  // The names the old scheme used: .<name>.<pid>.tmp for this process and its neighbours.
  for (pid_t p = ::getpid() - 8; p <= ::getpid() + 8; ++p) {
    fs::create_symlink(victim, d.path / fmt::format(".{}.{}.tmp", target.filename().string(), p));
  }
  write_file_atomic(target.string(), "dump");
  EXPECT_EQ(slurp(victim), "precious");
  EXPECT_EQ(slurp(target), "dump");
  EXPECT_FALSE(fs::is_symlink(target));
}

// A FIFO under the temporary name made the writer block forever in open(); the write runs in a
// child with an alarm so a regression fails instead of hanging the suite.
TEST(AtomicFile, APlantedFifoDoesNotBlockTheWriter) {
  TempDir d;
  const fs::path target = d.path / "results.json";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::alarm(5);
    const std::string fifo =
        (d.path / fmt::format(".{}.{}.tmp", target.filename().string(), ::getpid())).string();
    if (::mkfifo(fifo.c_str(), 0666) != 0) ::_exit(3);
    try {
      write_file_atomic(target.string(), "r");
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the writer was killed (blocked on the FIFO), signal "
                                 << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
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
