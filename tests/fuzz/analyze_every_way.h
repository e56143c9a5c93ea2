#pragma once
// What a fuzz target does with dumps that parsed: analyze them as files and as a live job and
// render both outputs. Any exception or crash here is a bug (the dumps were accepted), and so is
// a control character in the text report other than its newlines (what a dump says is printed
// as text, never as terminal commands).
#include <vector>

#include "debug/analyzer.h"

namespace collie::fuzz {

inline void analyze_every_way(const std::vector<RankDump>& dumps) {
  for (bool live : {false, true}) {
    AnalyzeOptions o;
    o.live = live;
    const Analysis a = analyze(dumps, o);
    for (const char c : to_text(a)) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\n') || u == 0x7f) __builtin_trap();
    }
    (void)to_json(a);
  }
}

}  // namespace collie::fuzz
