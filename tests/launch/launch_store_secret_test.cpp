// A job started by the launcher: rank 0 hosts the TcpStore with the launcher's per-job secret,
// so a local process outside the job (no secret, or a guessed one) cannot read or plant keys
// (issue 17: a planted debug_server/<r> key used to redirect the cluster view).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <sstream>

#include "core/error.h"
#include "launch/launch.h"
#include "store/socket_util.h"
#include "store/tcp_store.h"

namespace collie::launch {
namespace {

using namespace std::chrono_literals;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string outsider_error(uint16_t port, const std::string& secret) {
  TcpStoreOptions o;
  o.port = port;
  o.timeout = 10s;
  o.secret = secret;
  try {
    TcpStore s(o);
    s.set("debug_server/1", "http://127.0.0.1:1");
    return "outsider was served";
  } catch (const StoreError& e) {
    return e.what();
  }
}

TEST(LaunchStoreSecret, TheJobsStoreRefusesAnOutsider) {
  unsetenv("COLLIE_STORE_SECRET");
  uint16_t port = 0;
  close(net::listen_on("127.0.0.1", 0, &port));
  char out_tmpl[] = "/tmp/collie_secret_out_XXXXXX";
  char err_tmpl[] = "/tmp/collie_secret_err_XXXXXX";
  const int out = mkstemp(out_tmpl), err = mkstemp(err_tmpl);
  LaunchSpec s;
  s.nprocs = 2;
  // Rank 0 hosts the store and waits in a barrier for rank 1, which never comes.
  s.argv = {"/bin/sh", "-c",
            std::string("if [ \"$RANK\" = 0 ]; then exec ") + RENDEZVOUS_PROBE_PATH +
                "; else sleep 30; fi"};
  s.master_port = port;
  s.timeout = 4s;
  s.kill_grace = 200ms;
  s.out_fd = out;
  s.err_fd = err;
  auto job = std::async(std::launch::async, [&] { return run(s); });

  const std::string none = outsider_error(port, "");
  EXPECT_NE(none.find("store authentication failed"), std::string::npos) << none;
  const std::string guess = outsider_error(port, "0123456789abcdef");
  EXPECT_NE(guess.find("wrong COLLIE_STORE_SECRET"), std::string::npos) << guess;

  const LaunchResult r = job.get();
  EXPECT_TRUE(r.timed_out);  // the job ran on, undisturbed, until its deadline
  const std::string log = slurp(err_tmpl);
  EXPECT_NE(log.find("[0] W collie: store server: rejecting a client: store authentication failed"),
            std::string::npos)
      << log;
  close(out);
  close(err);
  unlink(out_tmpl);
  unlink(err_tmpl);
}

}  // namespace
}  // namespace collie::launch
