#pragma once
// The collectives of ProcessGroupGloo, one function per OpType, each running to completion on
// the calling thread over `ctx`. libgloo's options come from `prepared` (built on the first call
// with these buffers, reused after: see gloo_prepared.h). REQUIRES: the call was validated by
// ProcessGroup::submit; no other collective runs on ctx at the same time (Gloo slots are derived
// from `tag`).
// Throws Gloo's exceptions unchanged (the group translates them).
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/gloo/gloo_prepared.h"
#include "comm/op.h"

namespace gloo {
class Context;
}

namespace collie {

struct GlooOpArgs {
  const std::shared_ptr<gloo::Context>& ctx;
  const OpCall& call;
  uint32_t tag;
  std::vector<uint8_t>& scratch;  // reusable staging memory
  PreparedOps& prepared;          // libgloo options by call shape, reused across calls
};

void gloo_broadcast(const GlooOpArgs& a);
void gloo_all_reduce(const GlooOpArgs& a);
void gloo_reduce(const GlooOpArgs& a);
void gloo_all_gather(const GlooOpArgs& a);
void gloo_gather(const GlooOpArgs& a);
void gloo_scatter(const GlooOpArgs& a);
void gloo_reduce_scatter(const GlooOpArgs& a);
void gloo_all_to_all(const GlooOpArgs& a);
void gloo_barrier(const GlooOpArgs& a);

}  // namespace collie
