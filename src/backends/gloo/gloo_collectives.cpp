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
#include <memory>

#include "core/error.h"
#include "core/reduce_kernel.h"

namespace collie {
namespace {

// Gloo's option setters are templated only to learn the element size; data moves as bytes and
// reductions go through reduce_into, so a same-sized unsigned type stands in for every dtype.
template <typename F>
auto with_element_type(DType d, F&& f) {
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

void pre_scale(const OpCall& c, void* data, size_t n) {
  if (c.reduce_op == ReduceOp::PreMulSum) scale(data, n, c.input.dtype, c.premul_factor);
}

void post_divide(const OpCall& c, void* data, size_t n, int size) {
  if (c.reduce_op == ReduceOp::Avg) divide(data, n, c.input.dtype, size);
}

// The key of an op that reads `in` and writes `out` (both TensorViews, possibly empty).
GlooOpKey key_of(const OpCall& c, const void* in, size_t in_bytes, const void* out,
                 size_t out_bytes) {
  GlooOpKey k;
  k.type = c.type;
  k.in = in;
  k.in_bytes = in_bytes;
  k.out = out;
  k.out_bytes = out_bytes;
  k.dtype = c.input.numel ? c.input.dtype : c.output.dtype;
  k.reduce_op = has_reduce_op(c.type) ? c.reduce_op : ReduceOp::Sum;
  k.root = c.root;
  return k;
}

// Runs the prepared call for `key`, building its options with `build(T{})` on a miss, where T
// is the same-sized stand-in element type.
template <typename Build>
void run_prepared(const GlooOpArgs& a, GlooOpKey key, DType d, Build&& build) {
  a.prepared.get(std::move(key), [&] { return with_element_type(d, build); })
      .run(a.tag, a.call.timeout);
}

void gloo_broadcast(const GlooOpArgs& a) {
  const OpCall& c = a.call;
  if (c.input.numel == 0) return;
  run_prepared(a, key_of(c, c.input.data, c.input.nbytes(), nullptr, 0), c.input.dtype,
               [&](auto t) {
                 using T = decltype(t);
                 auto o = std::make_unique<gloo::BroadcastOptions>(a.ctx);
                 o->setOutput(typed<T>(c.input.data), c.input.numel);
                 o->setRoot(c.root);
                 return prepared(std::move(o), [](auto& x) { gloo::broadcast(x); });
               });
}

void gloo_all_reduce(const GlooOpArgs& a) {
  const OpCall& c = a.call;
  const size_t n = c.input.numel;
  if (n == 0) return;
  pre_scale(c, c.input.data, n);
  run_prepared(a, key_of(c, c.input.data, c.input.nbytes(), nullptr, 0), c.input.dtype,
               [&](auto t) {
                 using T = decltype(t);
                 auto o = std::make_unique<gloo::AllreduceOptions>(a.ctx);
                 o->setOutput(typed<T>(c.input.data), n);
                 o->setReduceFunction(reduction(c.input.dtype, c.reduce_op));
                 return prepared(std::move(o), [](auto& x) { gloo::allreduce(x); });
               });
  post_divide(c, c.input.data, n, a.ctx->size);
}

void gloo_reduce(const GlooOpArgs& a) {
  const OpCall& c = a.call;
  const size_t n = c.input.numel;
  if (n == 0) return;
  pre_scale(c, c.input.data, n);
  run_prepared(a, key_of(c, c.input.data, c.input.nbytes(), nullptr, 0), c.input.dtype,
               [&](auto t) {
                 using T = decltype(t);
                 auto o = std::make_unique<gloo::ReduceOptions>(a.ctx);
                 o->setOutput(typed<T>(c.input.data), n);
                 o->setRoot(c.root);
                 o->setReduceFunction(reduction(c.input.dtype, c.reduce_op));
                 return prepared(std::move(o), [](auto& x) { gloo::reduce(x); });
               });
  if (a.ctx->rank == c.root) post_divide(c, c.input.data, n, a.ctx->size);
}

void gloo_all_gather(const GlooOpArgs& a) {
  const OpCall& c = a.call;
  if (c.input.numel == 0) return;
  run_prepared(a, key_of(c, c.input.data, c.input.nbytes(), c.output.data, c.output.nbytes()),
               c.input.dtype, [&](auto t) {
                 using T = decltype(t);
                 auto o = std::make_unique<gloo::AllgatherOptions>(a.ctx);
                 o->setInput(typed<T>(c.input.data), c.input.numel);
                 o->setOutput(typed<T>(c.output.data), c.output.numel);
                 return prepared(std::move(o), [](auto& x) { gloo::allgather(x); });
               });
}

void gloo_gather(const GlooOpArgs& a) {
  const OpCall& c = a.call;
  if (c.input.numel == 0) return;
  const bool root = a.ctx->rank == c.root;
  run_prepared(a,
               key_of(c, c.input.data, c.input.nbytes(), root ? c.output.data : nullptr,
                      root ? c.output.nbytes() : 0),
               c.input.dtype, [&](auto t) {
                 using T = decltype(t);
                 auto o = std::make_unique<gloo::GatherOptions>(a.ctx);
                 o->setInput(typed<T>(c.input.data), c.input.numel);
                 if (root) o->setOutput(typed<T>(c.output.data), c.output.numel);
                 o->setRoot(c.root);
                 return prepared(std::move(o), [](auto& x) { gloo::gather(x); });
               });
}

void gloo_scatter(const GlooOpArgs& a) {
  const OpCall& c = a.call;
  const size_t n = c.output.numel;
  if (n == 0) return;
  const bool root = a.ctx->rank == c.root;
  run_prepared(a,
               key_of(c, root ? c.input.data : nullptr, root ? c.input.nbytes() : 0, c.output.data,
                      c.output.nbytes()),
               c.output.dtype, [&](auto t) {
                 using T = decltype(t);
                 auto o = std::make_unique<gloo::ScatterOptions>(a.ctx);
                 if (root) {
                   std::vector<T*> parts(a.ctx->size);
                   for (int r = 0; r < a.ctx->size; ++r) parts[r] = typed<T>(c.input.data) + r * n;
                   o->setInputs(parts, n);
                 }
                 o->setOutput(typed<T>(c.output.data), n);
                 o->setRoot(c.root);
                 return prepared(std::move(o), [](auto& x) { gloo::scatter(x); });
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

// Gloo all_to_all of `src` (the input's bytes) into `dst` with `dst_numel` elements.
void run_alltoall(const GlooOpArgs& a, void* src, void* dst, size_t dst_numel) {
  const OpCall& c = a.call;
  const size_t dst_bytes = dst_numel * dtype_size(c.input.dtype);
  run_prepared(a, key_of(c, src, c.input.nbytes(), dst, dst_bytes), c.input.dtype, [&](auto t) {
    using T = decltype(t);
    auto o = std::make_unique<gloo::AlltoallOptions>(a.ctx);
    o->setInput(typed<T>(src), c.input.numel);
    o->setOutput(typed<T>(dst), dst_numel);
    return prepared(std::move(o), [](auto& x) { gloo::alltoall(x); });
  });
}

void gloo_all_to_all(const GlooOpArgs& a) {
  const OpCall& c = a.call;
  if (c.input_splits.empty()) {
    if (c.input.numel == 0) return;
    run_alltoall(a, alltoall_source(a), c.output.data, c.output.numel);
    return;
  }
  void* src = alltoall_source(a);
  GlooOpKey key = key_of(c, src, c.input.nbytes(), c.output.data, c.output.nbytes());
  key.in_splits.assign(c.input_splits.begin(), c.input_splits.end());
  key.out_splits.assign(c.output_splits.begin(), c.output_splits.end());
  run_prepared(a, std::move(key), c.input.dtype, [&](auto t) {
    using T = decltype(t);
    auto o = std::make_unique<gloo::AlltoallvOptions>(a.ctx);
    o->setInput(typed<T>(src), std::vector<int64_t>(c.input_splits.begin(), c.input_splits.end()));
    o->setOutput(typed<T>(c.output.data),
                 std::vector<int64_t>(c.output_splits.begin(), c.output_splits.end()));
    return prepared(std::move(o), [](auto& x) { gloo::alltoallv(x); });
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
  run_alltoall(a, c.input.data, a.scratch.data(), n * size);
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

void gloo_send_recv(const GlooOpArgs& a) { a.p2p->post(); }

void gloo_barrier(const GlooOpArgs& a) {
  run_prepared(a, key_of(a.call, nullptr, 0, nullptr, 0), DType::UInt8, [&](auto) {
    return prepared(std::make_unique<gloo::BarrierOptions>(a.ctx),
                    [](auto& x) { gloo::barrier(x); });
  });
}

}  // namespace

const OpTable<GlooOpFn>& gloo_ops() {
  static constexpr OpTable<GlooOpFn> kOps =
      op_table<GlooOpFn>({{OpType::Send, gloo_send_recv},
                          {OpType::Recv, gloo_send_recv},
                          {OpType::Broadcast, gloo_broadcast},
                          {OpType::AllReduce, gloo_all_reduce},
                          {OpType::Reduce, gloo_reduce},
                          {OpType::AllGather, gloo_all_gather},
                          {OpType::Gather, gloo_gather},
                          {OpType::Scatter, gloo_scatter},
                          {OpType::ReduceScatter, gloo_reduce_scatter},
                          {OpType::AllToAll, gloo_all_to_all},
                          {OpType::Barrier, gloo_barrier}});
  return kOps;
}

}  // namespace collie
