// FileStore across real processes: forked children share one file with the parent.
#include "store/file_store.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "core/error.h"
#include "store_factories.h"

namespace collie {
namespace {

using namespace std::chrono_literals;

TEST(FileStore, WorksAcrossProcessesAndCleansUp) {
  constexpr int kChildren = 3, kAdds = 40;
  const std::string path = temp_store_path("fs_mp");
  std::vector<pid_t> kids;
  for (int i = 0; i < kChildren; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 0;
      try {
        FileStore s(path, kChildren + 1, 20s);
        for (int j = 0; j < kAdds; ++j) s.add("ctr", 1);
        s.set("child/" + std::to_string(i), std::to_string(getpid()));
        if (s.get_string("go") != "now") rc = 3;
      } catch (...) {
        rc = 2;
      }
      _exit(rc);
    }
    kids.push_back(pid);
  }
  {
    FileStore s(path, kChildren + 1, 20s);
    s.wait({"child/0", "child/1", "child/2"});
    EXPECT_EQ(s.add("ctr", 0), kChildren * kAdds);
    EXPECT_EQ(s.get_string("child/1"), std::to_string(kids[1]));
    s.set("go", "now");
    for (pid_t k : kids) {
      int status = 0;
      ASSERT_EQ(waitpid(k, &status, 0), k);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    }
    EXPECT_TRUE(std::filesystem::exists(path));
  }
  // The last of the kChildren + 1 workers removed the file.
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(FileStore, TornRecordAtTheEndIsIgnored) {
  const std::string path = temp_store_path("fs_torn");
  {
    FileStore s(path);
    s.set("k", "v");
  }
  {
    FILE* f = std::fopen(path.c_str(), "ab");
    const unsigned char partial[] = {50, 0, 0, 0, 1, 2};  // claims 50 bytes, has 2
    std::fwrite(partial, 1, sizeof(partial), f);
    std::fclose(f);
  }
  FileStore s(path);
  EXPECT_EQ(s.get_string("k"), "v");
  s.set("k2", "v2");  // overwrites the torn tail
  FileStore again(path);
  EXPECT_EQ(again.get_string("k2"), "v2");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace collie
