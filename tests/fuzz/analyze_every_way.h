#pragma once
// What a fuzz target does with dumps that parsed: analyze them as files and as a live job and
// render both outputs, and plan their replay (`collie replay`: it may refuse them in one
// InvalidArgument line). Any other exception or crash here is a bug (the dumps were accepted),
// and so is a control character in the text report or the replay's notes other than the
// report's newlines (what a dump says is printed as text, never as terminal commands).
#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "debug/analyzer.h"
#include "replay/plan.h"

namespace collie::fuzz {

inline void printable_or_trap(const std::string& text) {
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n') || u == 0x7f) __builtin_trap();
  }
}

inline void analyze_every_way(const std::vector<RankDump>& dumps) {
  for (bool live : {false, true}) {
    AnalyzeOptions o;
    o.live = live;
    const Analysis a = analyze(dumps, o);
    printable_or_trap(to_text(a));
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
    for (const std::string& note : p.notes) printable_or_trap(note);
  } catch (const InvalidArgument&) {
  }
}

}  // namespace collie::fuzz
