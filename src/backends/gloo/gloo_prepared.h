#pragma once
// PreparedOps: libgloo's options for a collective, built once per (op, buffers, sizes, dtype,
// reduce op, root, splits) and reused by every later call with the same arguments; only the tag
// and the timeout are set per call. This is how an expert calls libgloo, and it is what keeps
// collie's Gloo ops at libgloo's own speed (issue 31).
//
// Why it matters: libgloo's options own an UnboundBuffer over the caller's memory. Destroying
// one as soon as the op returns races with libgloo's I/O thread, which still holds the buffer
// while it finishes the completion callback that woke the caller; the destructor
// (gloo/common/memory.h, ~ShareableNonOwningPtr) then spins in sched_yield until the I/O thread
// lets go. With more busy threads than cores (a 2-vCPU VM running 2 ranks) that spin regularly
// lasts a whole scheduler tick (4 ms at 250 Hz): 6x a 1 MiB all_reduce. Reused options destroy a
// buffer only when it is evicted, long after its last op.
//
// Keys hold raw addresses. A buffer freed and another allocated at the same address with the
// same size reuses the entry, which is correct: an UnboundBuffer is an address and a length, and
// nothing is pending on it between two successful ops. After a failed op call clear(): libgloo
// may still have receives posted into those buffers.
// Bounded: at most kCapacity entries; the least recently used one is destroyed first.
// Ownership: owns the options (and their unbound buffers); the memory stays the caller's.
// Thread safety: none. ProcessGroupGloo calls it from the one thread that runs ops at a time.
#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "comm/op.h"

namespace collie {

// One prepared libgloo call. run() sets the tag and timeout and calls the algorithm.
class PreparedOp {
 public:
  virtual ~PreparedOp() = default;
  virtual void run(uint32_t tag, std::chrono::milliseconds timeout) = 0;
};

// Options of type `Options` plus the libgloo function that runs them.
template <typename Options, typename Call>
class PreparedCall final : public PreparedOp {
 public:
  PreparedCall(std::unique_ptr<Options> options, Call call)
      : options_(std::move(options)), call_(call) {}
  void run(uint32_t tag, std::chrono::milliseconds timeout) override {
    options_->setTag(tag);
    options_->setTimeout(timeout);
    call_(*options_);
  }

 private:
  std::unique_ptr<Options> options_;
  Call call_;
};

template <typename Options, typename Call>
std::unique_ptr<PreparedOp> prepared(std::unique_ptr<Options> options, Call call) {
  return std::make_unique<PreparedCall<Options, Call>>(std::move(options), call);
}

// Everything that shapes libgloo's options for one call.
struct GlooOpKey {
  OpType type = OpType::Barrier;
  const void* in = nullptr;
  size_t in_bytes = 0;
  const void* out = nullptr;
  size_t out_bytes = 0;
  DType dtype = DType::Float32;
  ReduceOp reduce_op = ReduceOp::Sum;
  int root = -1;
  std::vector<int64_t> in_splits, out_splits;  // all_to_all with splits only

  auto tie() const {
    return std::tie(type, in, in_bytes, out, out_bytes, dtype, reduce_op, root, in_splits,
                    out_splits);
  }
  bool operator<(const GlooOpKey& o) const { return tie() < o.tie(); }
};

class PreparedOps {
 public:
  static constexpr size_t kCapacity = 64;

  PreparedOps() = default;
  PreparedOps(const PreparedOps&) = delete;
  PreparedOps& operator=(const PreparedOps&) = delete;

  // The prepared call for `key`; on a miss, `build()` (returning std::unique_ptr<PreparedOp>)
  // makes it. The reference is valid until the next get() or clear().
  template <typename Build>
  PreparedOp& get(GlooOpKey&& key, Build&& build) {
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return *it->second->second;
    }
    std::unique_ptr<PreparedOp> op = build();
    lru_.emplace_front(std::move(key), std::move(op));
    index_.emplace(lru_.front().first, lru_.begin());
    if (lru_.size() > kCapacity) {
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
    return *lru_.front().second;
  }

  // Destroys every prepared call (after a failure, or before the context goes away).
  void clear();
  size_t size() const { return lru_.size(); }

 private:
  using Entry = std::pair<GlooOpKey, std::unique_ptr<PreparedOp>>;
  std::list<Entry> lru_;  // front: most recently used
  std::map<GlooOpKey, std::list<Entry>::iterator> index_;
};

}  // namespace collie
