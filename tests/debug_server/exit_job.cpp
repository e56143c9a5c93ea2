// A one-rank job that exits the ordinary way (return from main: exit handlers and static
// destructors run) while its debug server may still be serving a request. Started with
// COLLIE_DEBUG_PORT=0 by stacks_at_exit_test.cpp: prints "port N", runs for
// COLLIE_TEST_EXIT_AFTER_MS (default 300) and returns 0.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>

#include "debug_server/auto_start.h"
#include "debug_server/server.h"
#include "stack/init.h"

int main() {
  using namespace collie;
  try {
    const std::string file = "/tmp/collie_exit_job_" + std::to_string(::getpid());
    InitOptions o;
    o.init_method = "file://" + file;
    o.rank = 0;
    o.world_size = 1;
    auto pg = init_process_group(o);
    ::unlink(file.c_str());
    DebugServer* s = process_debug_server();
    if (s == nullptr) {
      std::fprintf(stderr, "exit_job: no debug server (set COLLIE_DEBUG_PORT)\n");
      return 1;
    }
    std::printf("port %d\n", s->port());
    std::fflush(stdout);
    const char* ms = std::getenv("COLLIE_TEST_EXIT_AFTER_MS");
    std::this_thread::sleep_for(std::chrono::milliseconds(ms ? std::atoi(ms) : 300));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exit_job: %s\n", e.what());
    return 1;
  }
}
