#pragma once
// A command run in the background by a test, the way a user runs it from a shell: its own
// process (and process group, so a test can signal the whole job), stdout and stderr captured
// in files that the test can read while it runs. The destructor kills what is still running.
//
//   ChildProcess job({COLLIE_BIN, "perf", "-np", "4", "-N", "0"}, {{"COLLIE_LOG_LEVEL", "info"}});
//   ASSERT_TRUE(job.wait_for_output([](const std::string& err) { ... }, std::chrono::seconds(10)));
//   job.signal(SIGINT);
//   auto st = job.wait(std::chrono::seconds(10));  // exit code, or nullopt while still running
//
// Thread safety: one thread per instance. Call before the test starts threads of its own if the
// command is the test binary itself (fork).
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace collie::testing {

class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::string out() const;  // everything written to stdout so far
  std::string err() const;  // everything written to stderr so far
  // Polls until pred(stderr) is true; false when the time runs out or the process exited first.
  bool wait_for_err(const std::function<bool(const std::string&)>& pred,
                    std::chrono::milliseconds within);
  void signal(int sig);  // to the process only (a launcher forwards it to its ranks)
  // Exit status (128 + signal when killed by one), or nullopt if still running after `within`.
  std::optional<int> wait(std::chrono::milliseconds within);

 private:
  pid_t pid_ = -1;
  std::string dir_;
  std::optional<int> status_;
};

std::string read_file(const std::string& path);

}  // namespace collie::testing
