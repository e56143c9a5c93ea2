#include "backends/conformance/conformance.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <optional>
#include <thread>

#include "core/error.h"
#include "support/oracle.h"

namespace collie::testing::conformance {

void Outcome::fail(std::string what) {
  if (failures.size() < 20) failures.push_back(std::move(what));
  ++failed;
}

std::string Outcome::summary() const {
  std::string s =
      fmt::format("ran {} of {} declared combinations, {} failed", ran, declared, failed);
  for (const auto& f : failures) s += "\n  " + f;
  if (failed > static_cast<int>(failures.size())) {
    s += fmt::format("\n  ... and {} more", failed - static_cast<int>(failures.size()));
  }
  return s;
}

namespace {

// One buffer on the group's device, filled from host bytes; read back after the group's work.
class Mem {
 public:
  Mem(device::DeviceRuntime& rt, DType d, const Bytes& init)
      : rt_(rt), d_(d), count_(init.size() / dtype_size(d)), mem_(rt.allocate(init.size() + 1)) {
    if (!init.empty()) rt_.copy_to_device(mem_.data(), init.data(), init.size());
  }
  TensorView view() const { return view(0, count_); }
  TensorView view(size_t first, size_t n) const {
    return rt_.view(mem_.data() + first * dtype_size(d_), n, d_);
  }
  Bytes read() const {
    rt_.synchronize();
    Bytes b(count_ * dtype_size(d_));
    if (!b.empty()) rt_.copy_to_host(b.data(), mem_.data(), b.size());
    return b;
  }

 private:
  device::DeviceRuntime& rt_;
  DType d_;
  size_t count_;
  device::Buffer mem_;
};

// One combination of a case.
struct Combo {
  DType d = DType::Float32;
  ReduceOp r = ReduceOp::Sum;
  size_t n = 0;
  int root = 0;
  bool in_place = false;
  bool async = false;
};

bool has_both_placements(OpType t) {
  switch (t) {
    case OpType::AllGather:
    case OpType::Gather:
    case OpType::Scatter:
    case OpType::ReduceScatter:
    case OpType::AllToAll:
      return true;
    default:  // send/recv have two buffers that never alias; the others are in place only
      return false;
  }
}

// The roots a rooted op runs at: count % world (varies with the count) and the last rank.
std::vector<int> roots_for(size_t n, int w) {
  std::vector<int> r{static_cast<int>(n % static_cast<size_t>(w))};
  if (w - 1 != r[0]) r.push_back(w - 1);
  return r;
}

// (dtype, reduce op) pairs the table declares for op t on dev; reduce op Sum for ops without one.
std::vector<std::pair<DType, ReduceOp>> declared_pairs(const Capabilities& caps, OpType t,
                                                       DeviceType dev) {
  std::vector<std::pair<DType, ReduceOp>> out;
  if (!caps.supports(t, dev)) return out;
  for (DType d : kAllDTypes) {
    if (!caps.supports(t, dev, d)) continue;
    if (!has_reduce_op(t)) {
      out.emplace_back(d, ReduceOp::Sum);
      continue;
    }
    for (ReduceOp r : kAllReduceOps) {
      if (caps.supports(t, dev, d, r)) out.emplace_back(d, r);
    }
  }
  return out;
}

std::string label(OpType t, const Combo& c) {
  if (t == OpType::Barrier) return fmt::format("barrier {}", c.async ? "async" : "sync");
  return fmt::format("{} {} {} count {}{}{} {}", op_name(t), dtype_name(c.d),
                     has_reduce_op(t) ? reduce_op_name(c.r) : "-", c.n,
                     has_root(t) ? fmt::format(" root {}", c.root) : "",
                     has_both_placements(t) ? (c.in_place ? " in-place" : " out-of-place") : "",
                     c.async ? "async" : "sync");
}

class Runner {
 public:
  Runner(ProcessGroup& pg, const Settings& s, Outcome& out)
      : pg_(pg), s_(s), out_(out), rt_(pg.device_runtime()), w_(pg.size()), me_(pg.rank()) {}

  void expect(const std::string& what, const Bytes& got, const Bytes& want, DType d) {
    if (std::string m = mismatch(got, want, d); !m.empty()) {
      out_.fail(fmt::format("rank {}: {}: {}", me_, what, m));
    }
  }
  void finish(const std::shared_ptr<Work>& w) { w->wait(s_.timeout); }

  void run(OpType t, const Combo& c) {
    const std::string what = label(t, c);
    switch (t) {
      case OpType::Send:
      case OpType::Recv:
        send_recv(c, what);
        break;
      case OpType::Broadcast:
        broadcast(c, what);
        break;
      case OpType::AllReduce:
      case OpType::Reduce:
        reduce(t, c, what);
        break;
      case OpType::AllGather:
        all_gather(c, what);
        break;
      case OpType::Gather:
        gather(c, what);
        break;
      case OpType::Scatter:
        scatter(c, what);
        break;
      case OpType::ReduceScatter:
        reduce_scatter(c, what);
        break;
      case OpType::AllToAll:
        all_to_all(c, what);
        break;
      case OpType::Barrier:
        barrier(c, what);
        break;
    }
    ++out_.ran;
  }

 private:
  // Every rank sends to (me + k) % w and receives from (me - k) % w, for every shift k, with
  // tag k. Synchronous: the first rank of each cycle of the shift sends first, the others receive
  // first (blocking calls cannot deadlock); async: both posted, then waited for.
  void send_recv(const Combo& c, const std::string& what) {
    for (int k = 1; k < w_; ++k) {
      const int dst = (me_ + k) % w_, src = (me_ + w_ - k) % w_;
      Mem out(rt_, c.d, p2p_payload(c.d, c.n, me_, dst, k));
      Mem in(rt_, c.d, sentinel(c.d, c.n));
      P2POptions o;
      o.tag = k;
      o.async_op = c.async;
      if (c.async) {
        auto rw = pg_.recv(in.view(), src, o);
        auto sw = pg_.send(out.view(), dst, o);
        finish(sw);
        finish(rw);
      } else if (me_ < std::gcd(k, w_)) {
        finish(pg_.send(out.view(), dst, o));
        finish(pg_.recv(in.view(), src, o));
      } else {
        finish(pg_.recv(in.view(), src, o));
        finish(pg_.send(out.view(), dst, o));
      }
      const std::string at = fmt::format("{} shift {}", what, k);
      expect(at + " received", in.read(), p2p_payload(c.d, c.n, src, me_, k), c.d);
      expect(at + " send buffer", out.read(), p2p_payload(c.d, c.n, me_, dst, k), c.d);
    }
  }

  void broadcast(const Combo& c, const std::string& what) {
    Mem b(rt_, c.d, me_ == c.root ? broadcast_input(c.d, c.n, c.root) : sentinel(c.d, c.n));
    BroadcastOptions o;
    o.root = c.root;
    o.async_op = c.async;
    finish(pg_.broadcast(b.view(), o));
    expect(what, b.read(), broadcast_input(c.d, c.n, c.root), c.d);
  }

  void reduce(OpType t, const Combo& c, const std::string& what) {
    Mem b(rt_, c.d, reduction_input(c.d, c.r, me_, c.n));
    ReduceOptions o;
    o.op = c.r;
    o.premul_factor = premul_factor(c.d);
    o.root = c.root;
    o.async_op = c.async;
    if (t == OpType::AllReduce) {
      finish(pg_.all_reduce(b.view(), o));
    } else {
      finish(pg_.reduce(b.view(), o));
    }
    if (t == OpType::AllReduce || me_ == c.root) {
      expect(what, b.read(), expected_reduced(c.d, c.r, w_, c.n, o.premul_factor), c.d);
    }
  }

  void all_gather(const Combo& c, const std::string& what) {
    const Bytes mine = gather_input(c.d, c.n, me_);
    const Bytes want = expected_gathered(c.d, c.n, w_);
    AllGatherOptions o;
    o.async_op = c.async;
    if (c.in_place) {
      Bytes init = sentinel(c.d, c.n * w_);
      std::copy(mine.begin(), mine.end(), init.begin() + static_cast<ptrdiff_t>(mine.size() * me_));
      Mem buf(rt_, c.d, init);
      finish(pg_.all_gather(buf.view(me_ * c.n, c.n), buf.view(), o));
      expect(what, buf.read(), want, c.d);
      return;
    }
    Mem in(rt_, c.d, mine), out(rt_, c.d, sentinel(c.d, c.n * w_));
    finish(pg_.all_gather(in.view(), out.view(), o));
    expect(what, out.read(), want, c.d);
    expect(what + " input", in.read(), mine, c.d);
  }

  void gather(const Combo& c, const std::string& what) {
    const Bytes mine = gather_input(c.d, c.n, me_);
    const Bytes want = expected_gathered(c.d, c.n, w_);
    GatherOptions o;
    o.root = c.root;
    o.async_op = c.async;
    if (c.in_place && me_ == c.root) {
      Bytes init = sentinel(c.d, c.n * w_);
      std::copy(mine.begin(), mine.end(), init.begin() + static_cast<ptrdiff_t>(mine.size() * me_));
      Mem buf(rt_, c.d, init);
      finish(pg_.gather(buf.view(me_ * c.n, c.n), buf.view(), o));
      expect(what, buf.read(), want, c.d);
      return;
    }
    Mem in(rt_, c.d, mine);
    std::optional<Mem> out;
    if (me_ == c.root) out.emplace(rt_, c.d, sentinel(c.d, c.n * w_));
    finish(pg_.gather(in.view(), out ? out->view() : TensorView{}, o));
    if (out) expect(what, out->read(), want, c.d);
    expect(what + " input", in.read(), mine, c.d);
  }

  void scatter(const Combo& c, const std::string& what) {
    const Bytes all = scatter_input(c.d, c.n, w_, c.root);
    const Bytes want = expected_scattered(c.d, c.n, me_, c.root);
    ScatterOptions o;
    o.root = c.root;
    o.async_op = c.async;
    if (c.in_place && me_ == c.root) {
      Mem buf(rt_, c.d, all);
      finish(pg_.scatter(buf.view(), buf.view(me_ * c.n, c.n), o));
      expect(what, buf.read(), all, c.d);
      return;
    }
    std::optional<Mem> in;
    if (me_ == c.root) in.emplace(rt_, c.d, all);
    Mem out(rt_, c.d, sentinel(c.d, c.n));
    TensorView inv = in ? in->view() : TensorView{};
    if (!in && c.async) inv.dtype = c.d;  // non-root input: nothing required, dtype or not
    finish(pg_.scatter(inv, out.view(), o));
    expect(what, out.read(), want, c.d);
    if (in) expect(what + " input", in->read(), all, c.d);
  }

  void reduce_scatter(const Combo& c, const std::string& what) {
    const Bytes input = reduction_input(c.d, c.r, me_, c.n * w_);
    ReduceScatterOptions o;
    o.op = c.r;
    o.premul_factor = premul_factor(c.d);
    o.async_op = c.async;
    // Block j of the input goes to rank j: rank me ends with elements [me*n, (me+1)*n).
    const Bytes want = expected_reduced(c.d, c.r, w_, c.n, o.premul_factor, me_ * c.n);
    if (c.in_place) {
      Mem buf(rt_, c.d, input);
      finish(pg_.reduce_scatter(buf.view(), buf.view(me_ * c.n, c.n), o));
      expect(what, slice(buf.read(), c.d, me_ * c.n, c.n), want, c.d);
      return;
    }
    Mem in(rt_, c.d, input), out(rt_, c.d, sentinel(c.d, c.n));
    finish(pg_.reduce_scatter(in.view(), out.view(), o));
    expect(what, out.read(), want, c.d);
    expect(what + " input (must be unchanged)", in.read(), input, c.d);
  }

  void all_to_all(const Combo& c, const std::string& what) {
    const Bytes input = all_to_all_input(c.d, c.n, w_, me_);
    const Bytes want = expected_all_to_all(c.d, c.n, w_, me_);
    AllToAllOptions o;
    o.async_op = c.async;
    if (c.in_place) {
      Mem buf(rt_, c.d, input);
      finish(pg_.all_to_all(buf.view(), buf.view(), o));
      expect(what, buf.read(), want, c.d);
      return;
    }
    Mem in(rt_, c.d, input), out(rt_, c.d, sentinel(c.d, c.n * w_));
    finish(pg_.all_to_all(in.view(), out.view(), o));
    expect(what, out.read(), want, c.d);
    expect(what + " input", in.read(), input, c.d);
  }

  // After an aligning barrier, rank 0 arrives 300 ms late: every other rank must wait for it (at
  // least 100 ms of it, leaving 200 ms for a rank descheduled on a loaded machine).
  void barrier(const Combo& c, const std::string& what) {
    BarrierOptions o;
    o.async_op = c.async;
    finish(pg_.barrier(o));
    const auto t0 = std::chrono::steady_clock::now();
    if (me_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    finish(pg_.barrier(o));
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    if (me_ != 0 && waited < 100) {
      out_.fail(fmt::format("rank {}: {}: left after {} ms, before rank 0 arrived (300 ms late)",
                            me_, what, waited));
    }
  }

  ProcessGroup& pg_;
  const Settings& s_;
  Outcome& out_;
  device::DeviceRuntime& rt_;
  const int w_, me_;
};

// Calls verb t with small, well-formed buffers of dtype d on `dev` (views over `mem`, which the
// caller sized to 2 * world elements), so that only the capability table can reject it.
std::shared_ptr<Work> issue(ProcessGroup& pg, OpType t, DType d, ReduceOp r, char* mem,
                            Device dev) {
  const int w = pg.size();
  const size_t n = 2, es = dtype_size(d);
  auto v = [&](size_t first, size_t count) {
    return TensorView{mem + first * es, count, d, dev, Shape{}};
  };
  switch (t) {
    case OpType::Send:
      return pg.send(v(0, n), (pg.rank() + 1) % w);
    case OpType::Recv:
      return pg.recv(v(0, n), (pg.rank() + w - 1) % w);
    case OpType::Broadcast:
      return pg.broadcast(v(0, n));
    case OpType::AllReduce: {
      AllReduceOptions o;
      o.op = r;
      return pg.all_reduce(v(0, n), o);
    }
    case OpType::Reduce: {
      ReduceOptions o;
      o.op = r;
      o.root = pg.rank();  // the root checks its buffer on every backend
      return pg.reduce(v(0, n), o);
    }
    case OpType::AllGather:
      return pg.all_gather(v(0, n), v(n, n * w));
    case OpType::Gather: {
      GatherOptions o;
      o.root = pg.rank();
      return pg.gather(v(0, n), v(n, n * w), o);
    }
    case OpType::Scatter: {
      ScatterOptions o;
      o.root = pg.rank();
      return pg.scatter(v(0, n * w), v(n * w, n), o);
    }
    case OpType::ReduceScatter: {
      ReduceScatterOptions o;
      o.op = r;
      return pg.reduce_scatter(v(0, n * w), v(n * w, n), o);
    }
    case OpType::AllToAll:
      return pg.all_to_all(v(0, n * w), v(n * w, n * w));
    case OpType::Barrier:
      return pg.barrier();
  }
  return nullptr;
}

}  // namespace

Outcome check_declared(ProcessGroup& pg, OpType t, const Settings& s) {
  Outcome out;
  const Capabilities& caps = pg.capabilities();
  const DeviceType dev = pg.device_runtime().device().type;
  const int w = pg.size();
  std::vector<std::pair<DType, ReduceOp>> pairs = declared_pairs(caps, t, dev);
  if (is_p2p(t)) {
    // One case for both: a send needs a matching recv of the same dtype.
    const OpType other = t == OpType::Send ? OpType::Recv : OpType::Send;
    std::erase_if(pairs, [&](const auto& p) { return !caps.supports(other, dev, p.first); });
    if (w == 1) pairs.clear();  // no peer to talk to
  }
  std::vector<Combo> combos;
  if (t == OpType::Barrier) {
    if (caps.supports(t, dev)) {
      combos.push_back(Combo{.async = false});
      combos.push_back(Combo{.async = true});
    }
  } else {
    // Synchronous and async_op alternate along every axis (pair, count, root, placement), so
    // each placement and root of each pair runs both ways over the counts.
    for (size_t ci = 0; ci < s.counts.size(); ++ci) {
      const size_t n = s.counts[ci];
      for (size_t pi = 0; pi < pairs.size(); ++pi) {
        const std::vector<int> roots = has_root(t) ? roots_for(n, w) : std::vector<int>{0};
        for (size_t ri = 0; ri < roots.size(); ++ri) {
          for (int place = 0; place < (has_both_placements(t) ? 2 : 1); ++place) {
            const bool async = (ci + pi + ri + static_cast<size_t>(place)) % 2 == 1;
            combos.push_back(
                Combo{pairs[pi].first, pairs[pi].second, n, roots[ri], place == 1, async});
          }
        }
      }
    }
    if (combos.empty() && caps.supports(t, dev) && !(is_p2p(t) && w == 1)) {
      out.fail(fmt::format("{} is declared on {} but no combination of it is", op_name(t),
                           device_type_name(dev)));
    }
  }
  out.declared = static_cast<int>(combos.size());
  Runner runner(pg, s, out);
  for (const Combo& c : combos) runner.run(t, c);
  return out;
}

Outcome check_undeclared(ProcessGroup& pg, const Settings& s) {
  Outcome out;
  const Capabilities& caps = pg.capabilities();
  device::DeviceRuntime& rt = pg.device_runtime();
  const Device own = rt.device();
  const int w = pg.size(), me = pg.rank();
  for (OpType t : kAllOpTypes) {
    if (t == OpType::Barrier) continue;  // no buffers, so no device or dtype to refuse
    if (is_p2p(t) && w == 1) continue;   // no valid peer
    for (DeviceType dt : {DeviceType::CPU, DeviceType::CUDA}) {
      const bool is_own = dt == own.type;
      // A device the group's buffers do not live on: only a refusal can be checked here.
      if (!is_own && caps.supports(t, dt)) continue;
      for (DType d : kAllDTypes) {
        for (ReduceOp r : kAllReduceOps) {
          if (!has_reduce_op(t) && r != ReduceOp::Sum) continue;
          if (is_own && caps.supports(t, dt, d, r)) continue;
          ++out.declared;
          const std::string what =
              fmt::format("undeclared {} {} {} on {}", op_name(t), dtype_name(d),
                          has_reduce_op(t) ? reduce_op_name(r) : "-", device_type_name(dt));
          const size_t count = 2 * static_cast<size_t>(w) * 2 + 2;
          const Bytes before = pattern(d, count, me, 7);
          // Own device: a real buffer of the group's runtime. Another device: host memory
          // labelled as that device, which the check must refuse before anything reads it.
          std::optional<Mem> dev_mem;
          Bytes host = before;
          char* mem = reinterpret_cast<char*>(host.data());
          Device where{dt, is_own ? own.index : 0};
          if (is_own) {
            dev_mem.emplace(rt, d, before);
            mem = reinterpret_cast<char*>(dev_mem->view().data);
          }
          std::shared_ptr<Work> work;
          try {
            work = issue(pg, t, d, r, mem, where);
            out.fail(fmt::format("rank {}: {}: the call was accepted (expected InvalidArgument)",
                                 me, what));
          } catch (const InvalidArgument& e) {
            const std::string msg = e.what();
            if (msg.find("does not support") == std::string::npos) {
              out.fail(fmt::format("rank {}: {}: InvalidArgument for another reason: {}", me, what,
                                   msg));
            }
          } catch (const std::exception& e) {
            out.fail(fmt::format("rank {}: {}: threw something other than InvalidArgument: {}", me,
                                 what, e.what()));
          }
          if (work) {  // accepted: let it end (its buffers are ours) before going on
            try {
              work->wait(s.timeout);
            } catch (const std::exception&) {
            }
          }
          const Bytes after = dev_mem ? dev_mem->read() : host;
          if (std::string m = mismatch(after, before, d); !m.empty()) {
            out.fail(fmt::format("rank {}: {}: buffers changed: {}", me, what, m));
          }
          ++out.ran;
        }
      }
    }
  }
  // Nothing was sent: the group still runs a declared reduction correctly on every rank.
  for (DType d : kAllDTypes) {
    if (!caps.supports(OpType::AllReduce, own.type, d, ReduceOp::Sum)) continue;
    try {
      Mem b(rt, d, reduction_input(d, ReduceOp::Sum, me, 7));
      pg.all_reduce(b.view())->wait(s.timeout);
      if (std::string m = mismatch(b.read(), expected_reduced(d, ReduceOp::Sum, w, 7, 1.0), d);
          !m.empty()) {
        out.fail(fmt::format("rank {}: all_reduce after the refused calls: {}", me, m));
      }
    } catch (const std::exception& e) {
      out.fail(fmt::format("rank {}: all_reduce after the refused calls failed: {}", me, e.what()));
    }
    break;
  }
  return out;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = [] {
    std::vector<Case> v;
    for (OpType t : kAllOpTypes) {
      if (t == OpType::Recv) continue;  // "send_recv" runs both
      const std::string name = t == OpType::Send ? "send_recv" : std::string(op_name(t));
      v.push_back(Case{
          name, [t](ProcessGroup& pg, const Settings& s) { return check_declared(pg, t, s); }});
    }
    v.push_back(Case{"undeclared", check_undeclared});
    return v;
  }();
  return all;
}

}  // namespace collie::testing::conformance
