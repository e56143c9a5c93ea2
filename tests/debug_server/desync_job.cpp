// A 2-rank job (run under `collie launch` with COLLIE_DEBUG=DETAIL and COLLIE_DEBUG_PORT) that
// makes the runtime count a real desync and a real monitored-barrier timeout, then keeps its
// debug servers up so Prometheus can scrape the counters: rank 0 calls all_reduce while rank 1
// calls broadcast (the DETAIL wrapper raises DesyncError), then only rank 0 enters a monitored
// barrier (TimeoutError naming rank 1). Prints "ready" on each rank, then waits for SIGTERM
// (at most 120 s).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>
#include <vector>

#include "core/error.h"
#include "monitored_barrier/monitored_barrier.h"
#include "stack/init.h"

int main() {
  using namespace collie;
  try {
    std::shared_ptr<ProcessGroup> pg = init_process_group();
    std::vector<float> v(16, 1.0f);
    const TensorView t = TensorView::cpu(v.data(), v.size(), DType::Float32);
    try {
      if (pg->rank() == 0) {
        pg->all_reduce(t)->wait();
      } else {
        pg->broadcast(t)->wait();
      }
      std::fprintf(stderr, "no desync detected (is COLLIE_DEBUG=DETAIL set?)\n");
      return 1;
    } catch (const DesyncError& e) {
      std::printf("desync detected: %.60s\n", e.what());
    }
    if (pg->rank() == 0) {
      try {
        monitored_barrier(*pg, std::chrono::milliseconds(300));
        std::fprintf(stderr, "monitored barrier passed without rank 1\n");
        return 1;
      } catch (const TimeoutError& e) {
        std::printf("barrier timeout: %.60s\n", e.what());
      }
    }
    std::printf("ready\n");
    std::fflush(stdout);
    for (int i = 0; i < 1200; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "desync_job: %s\n", e.what());
    return 2;
  }
}
