#pragma once
// What a fuzz target does with dumps that parsed: analyze them as files and as a live job and
// render both outputs, and plan their replay (`collie replay`: it may refuse them in one
// InvalidArgument line). Any other exception or crash here is a bug (the dumps were accepted).
#include <algorithm>
#include <vector>

#include "core/error.h"
#include "debug/analyzer.h"
#include "replay/plan.h"

namespace collie::fuzz {

inline void analyze_every_way(const std::vector<RankDump>& dumps) {
  for (bool live : {false, true}) {
    AnalyzeOptions o;
    o.live = live;
    const Analysis a = analyze(dumps, o);
    (void)to_text(a);
    (void)to_json(a);
  }
  replay::PlanOptions o;
  for (const RankDump& d : dumps) {
    o.world = std::max({o.world, d.world_size, d.rank + 1});
    for (const auto& [id, g] : d.groups)
      for (int r : g.ranks) o.world = std::max(o.world, r + 1);
  }
  try {
    const replay::ReplayPlan p = replay::build_plan(dumps, o);
    (void)p.fingerprint();
  } catch (const InvalidArgument&) {
  }
}

}  // namespace collie::fuzz
