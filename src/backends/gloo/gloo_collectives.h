#pragma once
// The ops of ProcessGroupGloo, one function per OpType in one table (gloo_ops(), comm/op_table.h).
// Collectives run to completion on the calling thread over `ctx`; send/recv hand the op to the
// group's `p2p` poster (posted now, completed by the group's waiter threads). libgloo's options
// come from `prepared` (built on the first call with these buffers, reused after: see
// gloo_prepared.h). REQUIRES: the call was validated by ProcessGroup::submit; no other collective
// runs on ctx at the same time (Gloo slots are derived from `tag`). Throws Gloo's exceptions
// unchanged (the group translates them).
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/gloo/gloo_prepared.h"
#include "comm/op_table.h"

namespace gloo {
class Context;
}

namespace collie {

// Posts the current call's send or recv; the group implements it.
class GlooP2PPoster {
 public:
  virtual void post() = 0;

 protected:
  ~GlooP2PPoster() = default;
};

struct GlooOpArgs {
  const std::shared_ptr<gloo::Context>& ctx;
  const OpCall& call;
  uint32_t tag;
  std::vector<uint8_t>& scratch;  // reusable staging memory
  PreparedOps& prepared;          // libgloo options by call shape, reused across calls
  GlooP2PPoster* p2p = nullptr;   // send/recv only
};

using GlooOpFn = void (*)(const GlooOpArgs&);
// The backend's op table: what it runs, and so what it declares it supports.
const OpTable<GlooOpFn>& gloo_ops();

}  // namespace collie
