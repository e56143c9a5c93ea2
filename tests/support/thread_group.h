#pragma once
// Test-only ProcessGroup whose ranks are threads of one process sharing a ThreadWorld. Every
// collective is computed from snapshots of all ranks' inputs with core's reduce kernels, so it is
// a straightforward reference to run the perf driver against without a network backend.
// It is registered as the backend "threads" (test_backends.h): run it through the shared harness,
//   run_ranks(n, body, {.backend = "threads", .mode = Mode::Threads, .stack = false});
// Thread safety: one ThreadGroup per rank thread; the ThreadWorld is shared and synchronized.
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "comm/process_group.h"
#include "core/error.h"
#include "core/reduce_kernel.h"

namespace collie::testing {

using Blob = std::vector<uint8_t>;

class ThreadWorld {
 public:
  explicit ThreadWorld(int n) : n_(n), slots_(n) {}
  int size() const { return n_; }

  // Generation barrier with a deadline.
  void barrier(int rank, Millis timeout) {
    std::unique_lock<std::mutex> lk(mu_);
    const uint64_t gen = gen_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++gen_;
      cv_.notify_all();
      return;
    }
    if (!cv_.wait_for(lk, timeout, [&] { return gen_ != gen; }))
      throw TimeoutError("[Rank " + std::to_string(rank) + "] thread-group barrier timed out");
  }
  // Publishes a copy of this rank's input, waits for everyone, returns all copies.
  std::vector<Blob> exchange(int rank, const TensorView& t, Millis timeout) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      const auto* p = static_cast<const uint8_t*>(t.data);
      slots_[rank].assign(p, p + t.nbytes());
    }
    barrier(rank, timeout);
    std::vector<Blob> all;
    {
      std::lock_guard<std::mutex> lk(mu_);
      all = slots_;
    }
    barrier(rank, timeout);  // nobody overwrites a slot before every rank copied it
    return all;
  }
  void post(int src, int dst, int tag, const TensorView& t) {
    std::lock_guard<std::mutex> lk(mu_);
    const auto* p = static_cast<const uint8_t*>(t.data);
    mail_[{src, dst, tag}].emplace_back(p, p + t.nbytes());
    cv_.notify_all();
  }
  Blob take(int src, int dst, int tag, Millis timeout) {
    std::unique_lock<std::mutex> lk(mu_);
    auto& q = mail_[{src, dst, tag}];
    if (!cv_.wait_for(lk, timeout, [&] { return !q.empty(); }))
      throw TimeoutError("[Rank " + std::to_string(dst) + "] recv from " + std::to_string(src) +
                         " timed out");
    Blob b = std::move(q.front());
    q.pop_front();
    return b;
  }

 private:
  const int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t gen_ = 0;
  std::vector<Blob> slots_;
  std::map<std::tuple<int, int, int>, std::deque<Blob>> mail_;
};

inline Capabilities thread_caps() {
  Capabilities c;
  c.backend = "threads";
  for (OpType t : kAllOpTypes) {
    auto& op = c.at(t);
    op.cpu = true;
    op.dtypes = kAllDTypeBits;
    op.reduce_ops = bit(ReduceOp::Sum) | bit(ReduceOp::Prod) | bit(ReduceOp::Min) |
                    bit(ReduceOp::Max) | bit(ReduceOp::Avg);
  }
  return c;
}

class ThreadGroup : public ProcessGroup {
 public:
  // info.rank and info.size place this rank in `w` (w->size() == info.size).
  ThreadGroup(GroupInfo info, std::shared_ptr<ThreadWorld> w)
      : ProcessGroup(std::move(info)), w_(std::move(w)), caps_(thread_caps()) {}
  const Capabilities& capabilities() const override { return caps_; }
  // Tests may give the group another device runtime (e.g. staged_runtime.h); null = host.
  void use_runtime(device::DeviceRuntime* rt) { runtime_ = rt; }
  device::DeviceRuntime& device_runtime() override {
    return runtime_ ? *runtime_ : ProcessGroup::device_runtime();
  }

 protected:
  std::shared_ptr<Work> run(const OpCall& c) override {
    auto work = std::make_shared<Work>(c.type, c.seq, c.timeout);
    try {
      execute(c);
      work->complete();
    } catch (...) {
      work->complete(std::current_exception());
    }
    return work;
  }

 private:
  void reduce_blocks(const std::vector<Blob>& in, size_t first, const OpCall& c, void* out,
                     size_t n) {
    const size_t ts = dtype_size(c.output.dtype);
    std::memcpy(out, in[0].data() + first * ts, n * ts);
    for (size_t k = 1; k < in.size(); ++k)
      reduce_into(out, in[k].data() + first * ts, n, c.output.dtype, c.reduce_op);
    if (c.reduce_op == ReduceOp::Avg) divide(out, n, c.output.dtype, size());
  }

  void execute(const OpCall& c) {
    const int r = rank(), n = size();
    const Millis t = c.timeout;
    const size_t ts = dtype_size(c.input.numel ? c.input.dtype : c.output.dtype);
    auto* out = static_cast<uint8_t*>(c.output.data);
    switch (c.type) {
      case OpType::Barrier:
        w_->barrier(r, t);
        return;
      case OpType::Send:
        w_->post(r, c.peer, c.tag, c.input);
        return;
      case OpType::Recv: {
        Blob b = w_->take(c.peer, r, c.tag, t);
        std::memcpy(out, b.data(), std::min(b.size(), c.output.nbytes()));
        return;
      }
      case OpType::Broadcast: {
        auto all = w_->exchange(r, c.input, t);
        std::memcpy(out, all[c.root].data(), c.output.nbytes());
        return;
      }
      case OpType::AllReduce:
      case OpType::Reduce: {
        auto all = w_->exchange(r, c.input, t);
        if (c.type == OpType::AllReduce || r == c.root)
          reduce_blocks(all, 0, c, out, c.output.numel);
        return;
      }
      case OpType::AllGather:
      case OpType::Gather: {
        auto all = w_->exchange(r, c.input, t);
        if (c.type == OpType::Gather && r != c.root) return;
        for (int k = 0; k < n; ++k)
          std::memcpy(out + k * all[k].size(), all[k].data(), all[k].size());
        return;
      }
      case OpType::Scatter: {
        auto all = w_->exchange(r, r == c.root ? c.input : TensorView{}, t);
        std::memcpy(out, all[c.root].data() + r * c.output.nbytes(), c.output.nbytes());
        return;
      }
      case OpType::ReduceScatter: {
        auto all = w_->exchange(r, c.input, t);
        reduce_blocks(all, r * c.output.numel, c, out, c.output.numel);
        return;
      }
      case OpType::AllToAll: {
        auto all = w_->exchange(r, c.input, t);
        if (c.input_splits.empty()) {
          const size_t block = c.input.numel / n * ts;
          for (int k = 0; k < n; ++k)
            std::memcpy(out + k * block, all[k].data() + r * block, block);
          return;
        }
        // With splits: rank r's block from k starts after what k sends the ranks below r.
        std::vector<int64_t> mine(c.input_splits.begin(), c.input_splits.end());
        auto splits = w_->exchange(r, TensorView::cpu(mine.data(), mine.size(), DType::Int64), t);
        size_t at = 0;
        for (int k = 0; k < n; ++k) {
          const auto* theirs = reinterpret_cast<const int64_t*>(splits[k].data());
          int64_t from = 0;
          for (int j = 0; j < r; ++j) from += theirs[j];
          const auto cnt = static_cast<size_t>(c.output_splits[k]);
          std::memcpy(out + at * ts, all[k].data() + static_cast<size_t>(from) * ts, cnt * ts);
          at += cnt;
        }
        return;
      }
    }
  }

  std::shared_ptr<ThreadWorld> w_;
  Capabilities caps_;
  device::DeviceRuntime* runtime_ = nullptr;
};

}  // namespace collie::testing
