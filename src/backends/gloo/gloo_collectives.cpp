#include "backends/gloo/gloo_collectives.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/scatter.h>

#include <cstring>

#include "core/error.h"
#include "core/reduce_kernel.h"

namespace collie {
namespace {

// Gloo's option setters are templated only to learn the element size; data moves as bytes and
// reductions go through reduce_into, so a same-sized unsigned type stands in for every dtype.
template <typename F>
void with_element_type(DType d, F&& f) {
  switch (dtype_size(d)) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    case 8:
      return f(uint64_t{});
    default:
      throw InvalidArgument("gloo: unsupported element size");
  }
}

template <typename T>
T* typed(void* p) {
  return static_cast<T*>(p);
}

// The combining op Gloo runs between buffers: avg and premul_sum reduce as sums (the scaling
// happens before/after), everything else as itself.
ReduceOp combining_op(ReduceOp op) {
  return op == ReduceOp::Avg || op == ReduceOp::PreMulSum ? ReduceOp::Sum : op;
}

std::function<void(void*, const void*, const void*, size_t)> reduction(DType d, ReduceOp op) {
  const ReduceOp r = combining_op(op);
  return [d, r](void* out, const void* a, const void* b, size_t n) {
    // All supported ops are commutative, so out may alias either input.
    if (out == a) {
      reduce_into(out, b, n, d, r);
    } else if (out == b) {
      reduce_into(out, a, n, d, r);
    } else {
      std::memcpy(out, a, n * dtype_size(d));
      reduce_into(out, b, n, d, r);
    }
  };
}

// Gloo derives its slots from the tag; the timeout bounds the whole op.
template <typename Options>
void set_tag_and_timeout(Options& o, const GlooOpArgs& a) {
  o.setTag(a.tag);
  o.setTimeout(a.call.timeout);
}

void pre_scale(const OpCall& c, void* data, size_t n) {
  if (c.reduce_op == ReduceOp::PreMulSum) scale(data, n, c.input.dtype, c.premul_factor);
}

void post_divide(const OpCall& c, void* data, size_t n, int size) {
  if (c.reduce_op == ReduceOp::Avg) divide(data, n, c.input.dtype, size);
}

}  // namespace

void gloo_broadcast(const GlooOpArgs& a) {
  const OpCall& c = a.call;
  if (c.input.numel == 0) return;
  with_element_type(c.input.dtype, [&](auto t) {
    using T = decltype(t);
    gloo::BroadcastOptions o(a.ctx);
    o.setOutput(typed<T>(c.input.data), c.input.numel);
    o.setRoot(c.root);
    set_tag_and_timeout(o, a);
    gloo::broadcast(o);
  });
}

void gloo_all_reduce(const GlooOpArgs& a) {
  const OpCall& c = a.call;
  const size_t n = c.input.numel;
  if (n == 0) return;
  pre_scale(c, c.input.data, n);
  with_element_type(c.input.dtype, [&](auto t) {
    using T = decltype(t);
    gloo::AllreduceOptions o(a.ctx);
    o.setOutput(typed<T>(c.input.data), n);
    o.setReduceFunction(reduction(c.input.dtype, c.reduce_op));
    set_tag_and_timeout(o, a);
    gloo::allreduce(o);
  });
  post_divide(c, c.input.data, n, a.ctx->size);
}

void gloo_reduce(const GlooOpArgs& a) {
  const OpCall& c = a.call;
  const size_t n = c.input.numel;
  if (n == 0) return;
  pre_scale(c, c.input.data, n);
  with_element_type(c.input.dtype, [&](auto t) {
    using T = decltype(t);
    gloo::ReduceOptions o(a.ctx);
    o.setOutput(typed<T>(c.input.data), n);
    o.setRoot(c.root);
    o.setReduceFunction(reduction(c.input.dtype, c.reduce_op));
    set_tag_and_timeout(o, a);
    gloo::reduce(o);
  });
  if (a.ctx->rank == c.root) post_divide(c, c.input.data, n, a.ctx->size);
}

void gloo_all_gather(const GlooOpArgs& a) {
  const OpCall& c = a.call;
  if (c.input.numel == 0) return;
  with_element_type(c.input.dtype, [&](auto t) {
    using T = decltype(t);
    gloo::AllgatherOptions o(a.ctx);
    o.setInput(typed<T>(c.input.data), c.input.numel);
    o.setOutput(typed<T>(c.output.data), c.output.numel);
    set_tag_and_timeout(o, a);
    gloo::allgather(o);
  });
}

void gloo_gather(const GlooOpArgs& a) {
  const OpCall& c = a.call;
  if (c.input.numel == 0) return;
  with_element_type(c.input.dtype, [&](auto t) {
    using T = decltype(t);
    gloo::GatherOptions o(a.ctx);
    o.setInput(typed<T>(c.input.data), c.input.numel);
    if (a.ctx->rank == c.root) o.setOutput(typed<T>(c.output.data), c.output.numel);
    o.setRoot(c.root);
    set_tag_and_timeout(o, a);
    gloo::gather(o);
  });
}

void gloo_scatter(const GlooOpArgs& a) {
  const OpCall& c = a.call;
  const size_t n = c.output.numel;
  if (n == 0) return;
  with_element_type(c.output.dtype, [&](auto t) {
    using T = decltype(t);
    gloo::ScatterOptions o(a.ctx);
    if (a.ctx->rank == c.root) {
      std::vector<T*> parts(a.ctx->size);
      for (int r = 0; r < a.ctx->size; ++r) parts[r] = typed<T>(c.input.data) + r * n;
      o.setInputs(parts, n);
    }
    o.setOutput(typed<T>(c.output.data), n);
    o.setRoot(c.root);
    set_tag_and_timeout(o, a);
    gloo::scatter(o);
  });
}

// True when the byte ranges of `a` and `b` overlap.
bool overlaps(const TensorView& a, const TensorView& b) {
  const auto* pa = static_cast<const uint8_t*>(a.data);
  const auto* pb = static_cast<const uint8_t*>(b.data);
  return pa != nullptr && pb != nullptr && pa < pb + b.nbytes() && pb < pa + a.nbytes();
}

// Gloo's alltoall writes blocks of the output while it still reads the input, so an in-place
// call (input overlapping output) would send data it already overwrote. Such a call sends from
// a copy of the input in the group's scratch memory instead; the output is the caller's.
void* alltoall_source(const GlooOpArgs& a) {
  const OpCall& c = a.call;
  if (!overlaps(c.input, c.output)) return c.input.data;
  a.scratch.resize(c.input.nbytes());
  std::memcpy(a.scratch.data(), c.input.data, c.input.nbytes());
  return a.scratch.data();
}

void gloo_all_to_all(const GlooOpArgs& a) {
  const OpCall& c = a.call;
  if (c.input_splits.empty()) {
    if (c.input.numel == 0) return;
    void* src = alltoall_source(a);
    with_element_type(c.input.dtype, [&](auto t) {
      using T = decltype(t);
      gloo::AlltoallOptions o(a.ctx);
      o.setInput(typed<T>(src), c.input.numel);
      o.setOutput(typed<T>(c.output.data), c.output.numel);
      set_tag_and_timeout(o, a);
      gloo::alltoall(o);
    });
    return;
  }
  void* src = alltoall_source(a);
  with_element_type(c.input.dtype, [&](auto t) {
    using T = decltype(t);
    gloo::AlltoallvOptions o(a.ctx);
    o.setInput(typed<T>(src), std::vector<int64_t>(c.input_splits.begin(), c.input_splits.end()));
    o.setOutput(typed<T>(c.output.data),
                std::vector<int64_t>(c.output_splits.begin(), c.output_splits.end()));
    set_tag_and_timeout(o, a);
    gloo::alltoallv(o);
  });
}

void gloo_reduce_scatter(const GlooOpArgs& a) {
  const OpCall& c = a.call;
  const size_t n = c.output.numel;
  if (n == 0) return;
  const DType d = c.input.dtype;
  const size_t bytes = n * dtype_size(d);
  const int size = a.ctx->size;
  // Every rank receives its block from every rank, then reduces the blocks in rank order (the
  // same bytes moved as a ring reduce-scatter, and a deterministic reduction order).
  a.scratch.resize(bytes * size);
  with_element_type(d, [&](auto t) {
    using T = decltype(t);
    gloo::AlltoallOptions o(a.ctx);
    o.setInput(typed<T>(c.input.data), c.input.numel);
    o.setOutput(typed<T>(a.scratch.data()), n * size);
    set_tag_and_timeout(o, a);
    gloo::alltoall(o);
  });
  uint8_t* out = static_cast<uint8_t*>(c.output.data);
  const ReduceOp r = combining_op(c.reduce_op);
  for (int i = 0; i < size; ++i) {
    uint8_t* block = a.scratch.data() + i * bytes;
    if (c.reduce_op == ReduceOp::PreMulSum) scale(block, n, d, c.premul_factor);
    if (i == 0) {
      std::memcpy(out, block, bytes);
    } else {
      reduce_into(out, block, n, d, r);
    }
  }
  post_divide(c, out, n, size);
}

void gloo_barrier(const GlooOpArgs& a) {
  gloo::BarrierOptions o(a.ctx);
  set_tag_and_timeout(o, a);
  gloo::barrier(o);
}

}  // namespace collie
