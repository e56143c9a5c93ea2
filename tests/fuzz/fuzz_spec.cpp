// libFuzzer target: acceptance specs as `collie accept --spec` loads them, YAML (first byte
// even) or JSON (odd). Any input must load or end in SpecError (one line, exit 2); anything
// else escaping load_spec, a crash, or unbounded memory (the YAML alias bomb) is a bug.
// Corpus: tests/fuzz/corpus/spec/. Run: scripts/fuzz.sh SECONDS fuzz_spec.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "probes/accept_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::string base = "/tmp/collie_fuzz_spec_" + std::to_string(::getpid());
  const std::string path = base + (data[0] % 2 == 0 ? ".yaml" : ".json");
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
  }
  try {
    (void)collie::probes::load_spec(path);
  } catch (const collie::probes::SpecError&) {
  }
  return 0;
}
