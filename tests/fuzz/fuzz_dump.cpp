// libFuzzer target: flight-recorder dumps (what `collie analyze` and the debug server's cluster
// view read from files and remote ranks). Any input must end in a dump or InvalidArgument, and
// the analysis of what parses must finish: another exception, a crash or a timeout is a bug.
// Corpus: tests/fuzz/corpus/dump/. Run: scripts/fuzz.sh SECONDS fuzz_dump.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analyze_every_way.h"
#include "core/error.h"
#include "debug/analyzer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<collie::RankDump> dumps;
  try {
    dumps.push_back(collie::parse_dump(text));
  } catch (const collie::InvalidArgument&) {
    return 0;
  }
  // Twice, as rank and as a second rank's copy, so cross-rank comparisons run too.
  dumps.push_back(dumps[0]);
  dumps[1].rank = dumps[0].rank + 1 < collie::kMaxAnalyzeWorld ? dumps[0].rank + 1 : 0;
  collie::fuzz::analyze_every_way(dumps);
  return 0;
}
