// libFuzzer target: result files (collie.perf.v1 JSON) as `collie report` loads them. Any
// input must load or end in InvalidArgument (one line, exit 2 in the CLI); anything else
// escaping load_run is an "internal error" and a bug. Rendering what loads must not crash.
// Corpus: tests/fuzz/corpus/results/. Run: scripts/fuzz.sh SECONDS fuzz_results.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "core/error.h"
#include "reports/load.h"
#include "reports/render.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // load_run reads a path: one scratch file per fuzzing process.
  static const std::string path =
      "/tmp/collie_fuzz_results_" + std::to_string(::getpid()) + ".json";
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const collie::reports::LoadedRun run = collie::reports::load_run(path);
    (void)collie::reports::render_table({run});
    (void)collie::reports::render_markdown({run});
  } catch (const collie::InvalidArgument&) {
  }
  return 0;
}
