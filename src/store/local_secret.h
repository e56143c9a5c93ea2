#pragma once
// Where a local launcher (collie launch, collie perf/probe/accept -np) leaves its job's store
// secret for `collie analyze --live 127.0.0.1:PORT` started by the same user on the same host,
// so the line the launcher prints works when pasted, and the secret is never printed: a file
// store-<PORT>.secret of mode 0600 in a folder only this user may enter ($XDG_RUNTIME_DIR/collie,
// else /tmp/collie-<uid>; mode 0700, owned by this user). A folder or file that another user
// could have planted (wrong owner, wider mode, a symlink) is neither written nor read.
// Callers send the secret only to a loopback host (debug_server/server.h is_loopback_host).
// Thread safety: stateless functions; one LocalSecretFile per job.
#include <cstdint>
#include <string>

namespace collie {

// The folder, created (0700) when missing; "" with `why` set when it is not safe to use.
std::string local_secret_dir(std::string* why = nullptr);

// Writes the secret for `port` at construction and removes the file at destruction. ok() is
// false (nothing written, `why()` says why) when the folder is unsafe or the write failed.
class LocalSecretFile {
 public:
  LocalSecretFile(uint16_t port, const std::string& secret);
  ~LocalSecretFile();
  LocalSecretFile(const LocalSecretFile&) = delete;
  LocalSecretFile& operator=(const LocalSecretFile&) = delete;
  bool ok() const { return !path_.empty(); }
  const std::string& why() const { return why_; }

 private:
  std::string path_;  // "" when nothing was written
  std::string why_;
};

// The secret a local launcher left for `port`, or "" when there is none (or it is not safe: not
// a regular file of this user with mode 0600 in a safe folder, or longer than a secret can be).
std::string read_local_secret(uint16_t port);

}  // namespace collie
