// A 2-rank job built against the installed collie: init_process_group over file:// (rank and
// world size from RANK / WORLD_SIZE, as under a launcher), one all_reduce on Gloo, checked, then
// a barrier and a monitored_barrier.
// Usage: ranks FILE_STORE_PATH   (env: RANK, WORLD_SIZE)
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "monitored_barrier/monitored_barrier.h"
#include "stack/init.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ranks FILE_STORE_PATH\n");
    return 2;
  }
  try {
    collie::InitOptions o;
    o.backend = "gloo";
    o.init_method = std::string("file://") + argv[1];
    auto pg = collie::init_process_group(o);
    std::vector<float> x(1024, static_cast<float>(pg->rank() + 1));
    pg->all_reduce(collie::TensorView::cpu(x.data(), x.size(), collie::DType::Float32))->wait();
    const float want = static_cast<float>(pg->size() * (pg->size() + 1) / 2);
    const bool ok = x.front() == want && x.back() == want;
    std::printf("rank %d of %d: all_reduce %s\n", pg->rank(), pg->size(), ok ? "ok" : "WRONG");
    pg->barrier()->wait();
    collie::monitored_barrier(*pg);
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ranks: %s\n", e.what());
    return 1;
  }
}
