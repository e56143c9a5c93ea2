#include "metrics/live_status.h"

#include <algorithm>

namespace collie {
namespace {

constexpr uint64_t kP2pBit = uint64_t{1} << 63;

uint64_t key_of(OpType op, uint64_t seq) { return seq | (is_p2p(op) ? kP2pBit : 0); }

}  // namespace

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

LiveStatus& LiveStatus::global() {
  static LiveStatus* s = new LiveStatus();  // never destroyed: observers may run at exit
  return *s;
}

int LiveStatus::find_group(const GroupTrace& g) const {
  const int n = used_.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (slots_[i].trace == &g) return i;
  }
  return -1;
}

int LiveStatus::add_group(const GroupTrace& g) {
  std::lock_guard<std::mutex> lock(mu_);
  if (int i = find_group(g); i >= 0) return i;
  const int n = used_.load(std::memory_order_relaxed);
  if (n >= kMaxGroups) return -1;
  Slot& s = slots_[n];
  s.trace = &g;
  s.size = g.global_ranks.empty() ? 1 : static_cast<int>(g.global_ranks.size());
  s.last_progress_ns.store(steady_now_ns(), std::memory_order_relaxed);
  used_.store(n + 1, std::memory_order_release);
  return n;
}

void LiveStatus::started(int slot, OpType op, uint64_t seq, uint64_t bytes, int64_t now) {
  if (slot < 0) return;
  Slot& s = slots_[slot];
  s.started.add(s.owner.mine(), 1);
  s.last_progress_ns.store(now, std::memory_order_relaxed);
  const uint64_t key = key_of(op, seq);
  // One thread at a time submits a group's ops (ProcessGroup's contract), so no other thread
  // claims a free entry meanwhile: a store claims it. finished() only clears entries in use
  // (acquire: its clearing of the start time comes before this op's).
  for (Entry& e : s.entries) {
    if (e.key.load(std::memory_order_acquire) == 0) {
      e.key.store(key, std::memory_order_relaxed);
      e.op.store(static_cast<uint8_t>(op), std::memory_order_relaxed);
      e.bytes.store(bytes, std::memory_order_relaxed);
      e.start_ns.store(now, std::memory_order_release);
      return;
    }
  }
}

void LiveStatus::finished(int slot, OpType op, uint64_t seq, bool ok, int64_t now) {
  if (slot < 0) return;
  Slot& s = slots_[slot];
  if (ok) {
    s.last_completed_op.store(static_cast<int>(op), std::memory_order_relaxed);
    // After the op's started (snapshot).
    s.completed.add(s.owner.mine(), 1, std::memory_order_release);
  } else {
    s.failed.add(s.owner.mine(), 1, std::memory_order_release);
  }
  s.last_progress_ns.store(now, std::memory_order_relaxed);
  const uint64_t key = key_of(op, seq);
  for (Entry& e : s.entries) {
    if (e.key.load(std::memory_order_acquire) != key) continue;
    // Clear the start time first so a reader never pairs the next op's key with this one's time.
    e.start_ns.store(0, std::memory_order_release);
    e.key.store(0, std::memory_order_release);
    return;
  }
}

std::vector<LiveStatus::GroupSnapshot> LiveStatus::snapshot() const {
  std::vector<GroupSnapshot> out;
  const int n = used_.load(std::memory_order_acquire);
  const int64_t now = steady_now_ns();
  for (int i = 0; i < n; ++i) {
    const Slot& s = slots_[i];
    const GroupTrace& t = *s.trace;
    GroupSnapshot g;
    g.pg = t.pg_id;
    g.desc = t.desc;
    g.backend = t.backend;
    g.rank = t.global_rank;
    g.group_rank = t.rank;
    g.size = s.size;
    g.last_enqueued_seq = t.last_enqueued_collective.load(std::memory_order_relaxed);
    g.last_started_seq = t.last_started_collective.load(std::memory_order_relaxed);
    g.last_completed_seq = t.last_completed_collective.load(std::memory_order_relaxed);
    g.last_enqueued_p2p_seq = t.last_enqueued_p2p.load(std::memory_order_relaxed);
    g.last_completed_p2p_seq = t.last_completed_p2p.load(std::memory_order_relaxed);
    const int last_op = s.last_completed_op.load(std::memory_order_relaxed);
    if (last_op >= 0) g.last_completed_op = op_name(static_cast<OpType>(last_op));
    // The finished counts before the started one: an op counted finished was started earlier.
    g.ops_completed = s.completed.load(std::memory_order_acquire);
    g.ops_failed = s.failed.load(std::memory_order_acquire);
    g.inflight =
        std::max<int64_t>(0, static_cast<int64_t>(s.started.load(std::memory_order_acquire) -
                                                  g.ops_completed - g.ops_failed));
    g.since_last_progress_s = (now - s.last_progress_ns.load(std::memory_order_relaxed)) * 1e-9;
    for (const Entry& e : s.entries) {
      const uint64_t key = e.key.load(std::memory_order_acquire);
      if (key == 0) continue;
      InflightOp op;
      op.seq = key & ~kP2pBit;
      op.p2p = (key & kP2pBit) != 0;
      op.op = static_cast<OpType>(e.op.load(std::memory_order_relaxed));
      op.bytes = e.bytes.load(std::memory_order_relaxed);
      const int64_t start = e.start_ns.load(std::memory_order_acquire);
      op.age_s = start > 0 ? std::max<int64_t>(0, now - start) * 1e-9 : 0;
      g.inflight_ops.push_back(op);
    }
    std::sort(g.inflight_ops.begin(), g.inflight_ops.end(),
              [](const InflightOp& a, const InflightOp& b) { return a.seq < b.seq; });
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace collie
