// Every op x dtype x reduce op the gloo backend declares, checked against references computed
// here, at world sizes 1, 2, 3, 4 and 8 with counts 1, 7 and 1000 (one group per world size).
#include <gtest/gtest.h>

#include "comm/registry.h"
#include "support/multiprocess.h"
#include "test_values.h"

namespace collie::testing {
namespace {

constexpr size_t kCounts[] = {1, 7, 1000};

double plain_value(int rank, size_t i) { return static_cast<double>((rank * 13 + i) % 100); }
double a2a_value(int src, int dst, size_t i) {
  return static_cast<double>((src * 3 + dst * 5 + i) % 100);
}

TensorView view(Buffer& b) { return TensorView::cpu(b.data(), b.numel, b.dtype); }

std::string label(OpType t, DType d, ReduceOp r, size_t count, int root) {
  return fmt::format("{} {} {} count {} root {}", op_name(t), dtype_name(d),
                     has_reduce_op(t) ? reduce_op_name(r) : "-", count, root);
}

void expect_equal(const Buffer& b, size_t i, double want, const std::string& what, int rank,
                  ReduceOp r = ReduceOp::Sum) {
  const double got = b.at(i);
  check(same_value(got, want, b.dtype, r), "rank {}: {}: element {} is {}, expected {}", rank, what,
        i, got, want);
}

// Runs one op with one combination and checks this rank's result.
void check_op(RankContext& ctx, OpType t, DType d, ReduceOp r, size_t n, bool async) {
  ProcessGroup& pg = *ctx.pg;
  const int w = ctx.world_size, me = ctx.rank;
  const int root = static_cast<int>(n % static_cast<size_t>(w));
  const std::string what = label(t, d, r, n, root);
  switch (t) {
    case OpType::Send:
    case OpType::Recv: {
      if (w == 1) return;
      Buffer out(n, d), in(n, d);
      for (size_t i = 0; i < n; ++i) out.set(i, plain_value(me, i));
      P2POptions o;
      o.tag = 3;
      o.async_op = async;
      auto rw = pg.recv(view(in), (me + w - 1) % w, o);
      auto sw = pg.send(view(out), (me + 1) % w, o);
      sw->wait();
      rw->wait();
      for (size_t i = 0; i < n; ++i)
        expect_equal(in, i, plain_value((me + w - 1) % w, i), what, me);
      return;
    }
    case OpType::Broadcast: {
      Buffer b(n, d);
      for (size_t i = 0; i < n; ++i) b.set(i, me == root ? plain_value(root, i) : 0);
      BroadcastOptions o;
      o.root = root;
      o.async_op = async;
      pg.broadcast(view(b), o)->wait();
      for (size_t i = 0; i < n; ++i) expect_equal(b, i, plain_value(root, i), what, me);
      return;
    }
    case OpType::AllReduce:
    case OpType::Reduce: {
      Buffer b(n, d);
      for (size_t i = 0; i < n; ++i) b.set(i, input_value(r, me, i));
      ReduceOptions o;
      o.op = r;
      o.premul_factor = premul_factor(d);
      o.root = root;
      o.async_op = async;
      if (t == OpType::AllReduce) {
        pg.all_reduce(view(b), o)->wait();
      } else {
        pg.reduce(view(b), o)->wait();
      }
      if (t == OpType::AllReduce || me == root) {
        for (size_t i = 0; i < n; ++i) {
          expect_equal(b, i, expected_reduction(r, w, i, d, o.premul_factor), what, me, r);
        }
      }
      return;
    }
    case OpType::ReduceScatter: {
      Buffer in(n * w, d), out(n, d);
      // Block j goes to rank j; element i of it carries input_value for index j*n+i.
      for (size_t i = 0; i < n * w; ++i) in.set(i, input_value(r, me, i));
      ReduceScatterOptions o;
      o.op = r;
      o.premul_factor = premul_factor(d);
      o.async_op = async;
      pg.reduce_scatter(view(in), view(out), o)->wait();
      for (size_t i = 0; i < n; ++i) {
        expect_equal(out, i, expected_reduction(r, w, me * n + i, d, o.premul_factor), what, me, r);
      }
      for (size_t i = 0; i < n * w; ++i) {
        expect_equal(in, i, input_value(r, me, i), what + " (input must be unchanged)", me);
      }
      return;
    }
    case OpType::AllGather:
    case OpType::Gather: {
      Buffer in(n, d), out(n * w, d);
      for (size_t i = 0; i < n; ++i) in.set(i, plain_value(me, i));
      GatherOptions o;
      o.root = root;
      o.async_op = async;
      if (t == OpType::AllGather) {
        AllGatherOptions ao;
        ao.async_op = async;
        pg.all_gather(view(in), view(out), ao)->wait();
      } else {
        TensorView outv = me == root ? view(out) : TensorView{};
        pg.gather(view(in), outv, o)->wait();
      }
      if (t == OpType::AllGather || me == root) {
        for (int src = 0; src < w; ++src) {
          for (size_t i = 0; i < n; ++i)
            expect_equal(out, src * n + i, plain_value(src, i), what, me);
        }
      }
      return;
    }
    case OpType::Scatter: {
      Buffer in(n * w, d), out(n, d);
      for (int dst = 0; dst < w; ++dst) {
        for (size_t i = 0; i < n; ++i) in.set(dst * n + i, plain_value(dst, i));
      }
      ScatterOptions o;
      o.root = root;
      o.async_op = async;
      TensorView inv = me == root ? view(in) : TensorView{};
      if (me != root) inv.dtype = d;
      pg.scatter(inv, view(out), o)->wait();
      for (size_t i = 0; i < n; ++i) expect_equal(out, i, plain_value(me, i), what, me);
      return;
    }
    case OpType::AllToAll: {
      Buffer in(n * w, d), out(n * w, d);
      for (int dst = 0; dst < w; ++dst) {
        for (size_t i = 0; i < n; ++i) in.set(dst * n + i, a2a_value(me, dst, i));
      }
      AllToAllOptions o;
      o.async_op = async;
      pg.all_to_all(view(in), view(out), o)->wait();
      for (int src = 0; src < w; ++src) {
        for (size_t i = 0; i < n; ++i)
          expect_equal(out, src * n + i, a2a_value(src, me, i), what, me);
      }
      return;
    }
    case OpType::Barrier: {
      BarrierOptions o;
      o.async_op = async;
      pg.barrier(o)->wait();
      return;
    }
  }
}

// Runs every combination the capability table declares; returns how many ran.
int run_declared_matrix(RankContext& ctx) {
  const Capabilities& caps = ctx.pg->capabilities();
  int ran = 0;
  bool async = false;
  for (size_t n : kCounts) {
    for (OpType t : kAllOpTypes) {
      if (!caps.supports(t, DeviceType::CPU)) continue;
      for (DType d : kAllDTypes) {
        if (!caps.supports(t, DeviceType::CPU, d)) continue;
        if (t == OpType::Barrier && d != DType::Float32) continue;  // no buffers, no dtype
        for (ReduceOp r : kAllReduceOps) {
          if (!has_reduce_op(t) && r != ReduceOp::Sum) continue;
          if (has_reduce_op(t) && !caps.supports(t, DeviceType::CPU, d, r)) continue;
          async = !async;  // alternate inline and worker-thread execution
          check_op(ctx, t, d, r, n, async);
          ++ran;
        }
      }
    }
  }
  return ran;
}

int declared_combinations(const Capabilities& caps) {
  int total = 0;
  for (OpType t : kAllOpTypes) {
    if (!caps.supports(t, DeviceType::CPU)) continue;
    if (t == OpType::Barrier) {
      ++total;
      continue;
    }
    for (DType d : kAllDTypes) {
      if (!caps.supports(t, DeviceType::CPU, d)) continue;
      if (!has_reduce_op(t)) {
        ++total;
        continue;
      }
      for (ReduceOp r : kAllReduceOps) total += caps.supports(t, DeviceType::CPU, d, r) ? 1 : 0;
    }
  }
  return total * static_cast<int>(std::size(kCounts));
}

void run_world(int world) {
  RunOptions opts;
  opts.deadline = Millis(120000);
  auto result = run_ranks(
      world,
      [](RankContext& ctx) {
        const int ran = run_declared_matrix(ctx);
        const int declared = declared_combinations(ctx.pg->capabilities());
        check(ran == declared, "rank {} ran {} combinations, the table declares {}", ctx.rank, ran,
              declared);
      },
      opts);
  EXPECT_TRUE(result.ok()) << result.summary();
}

TEST(GlooCollectives, World1) { run_world(1); }
TEST(GlooCollectives, World2) { run_world(2); }
TEST(GlooCollectives, World3) { run_world(3); }
TEST(GlooCollectives, World4) { run_world(4); }
TEST(GlooCollectives, World8) { run_world(8); }

TEST(GlooCapabilities, DeclaresEveryOpDtypeAndReduceOpOnCpu) {
  const BackendRegistration* reg = find_backend("gloo");
  ASSERT_NE(reg, nullptr);
  EXPECT_FALSE(reg->version.empty());
  const Capabilities& caps = reg->capabilities;
  for (OpType t : kAllOpTypes) {
    EXPECT_TRUE(caps.supports(t, DeviceType::CPU)) << op_name(t);
    EXPECT_FALSE(caps.supports(t, DeviceType::CUDA)) << op_name(t);
    for (DType d : kAllDTypes) {
      EXPECT_TRUE(caps.supports(t, DeviceType::CPU, d)) << op_name(t) << " " << dtype_name(d);
      if (!has_reduce_op(t)) continue;
      for (ReduceOp r : kAllReduceOps) {
        EXPECT_EQ(caps.supports(t, DeviceType::CPU, d, r), !(is_bitwise(r) && is_floating(d)))
            << op_name(t) << " " << dtype_name(d) << " " << reduce_op_name(r);
      }
    }
  }
}

}  // namespace
}  // namespace collie::testing
