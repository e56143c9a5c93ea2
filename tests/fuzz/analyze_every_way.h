#pragma once
// What a fuzz target does with dumps that parsed: analyze them as files and as a live job and
// render both outputs. Any exception or crash here is a bug (the dumps were accepted).
#include <vector>

#include "debug/analyzer.h"

namespace collie::fuzz {

inline void analyze_every_way(const std::vector<RankDump>& dumps) {
  for (bool live : {false, true}) {
    AnalyzeOptions o;
    o.live = live;
    const Analysis a = analyze(dumps, o);
    (void)to_text(a);
    (void)to_json(a);
  }
}

}  // namespace collie::fuzz
