// libFuzzer target: PyTorch flight-recorder dumps (pickles `collie analyze` finds in a dump
// directory). Any input must end in a dump or InvalidArgument — never executed, never a crash, a
// leak or a timeout — and the analysis of what parses must finish, as in fuzz_dump.
// Corpus: tests/fuzz/corpus/torch_dump/. Run: scripts/fuzz.sh SECONDS fuzz_torch_dump.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "analyze_every_way.h"
#include "core/error.h"
#include "debug/analyzer.h"
#include "debug/torch_dump.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::vector<collie::RankDump> dumps;
  try {
    dumps.push_back(collie::parse_torch_dump(bytes, 0));
    dumps.push_back(collie::parse_torch_dump(bytes, 1));
  } catch (const collie::InvalidArgument&) {
    return 0;
  }
  collie::fuzz::analyze_every_way(dumps);
  return 0;
}
