#pragma once
// Feeds MetricsObserver the events TracingProcessGroup emits (same order of GroupTrace updates
// and callbacks), for tests that run ranks as threads without a backend.
#include <chrono>
#include <string>

#include "metrics/metrics_observer.h"

namespace collie::testing {

inline void raise_to(std::atomic<uint64_t>& a, uint64_t v) {
  if (a.load() < v) a.store(v);
}

inline void trace_scheduled(MetricsObserver& o, GroupTrace& g, OpType op, uint64_t seq,
                            size_t bytes) {
  raise_to(is_p2p(op) ? g.last_enqueued_p2p : g.last_enqueued_collective, seq);
  OpEvent e;
  e.group = &g;
  e.op = op;
  e.seq = seq;
  e.bytes = bytes;
  o.on_op_scheduled(e);
  if (!is_p2p(op)) raise_to(g.last_started_collective, seq);
}

inline void trace_completed(MetricsObserver& o, GroupTrace& g, OpType op, uint64_t seq,
                            size_t bytes, std::chrono::nanoseconds took, bool failed = false,
                            std::exception_ptr error = nullptr) {
  if (is_p2p(op)) {
    g.last_completed_p2p.raise(g.completing.mine(), seq);
  } else if (!failed) {
    g.last_completed_collective.raise(g.completing.mine(), seq);
  }
  OpEvent e;
  e.group = &g;
  e.op = op;
  e.seq = seq;
  e.bytes = bytes;
  e.created_ns = 1'000'000'000;
  e.completed_ns = e.created_ns + took.count();
  e.failed = failed;
  e.error = error;
  o.on_op_completed(e);
}

inline void init_trace(GroupTrace& g, int rank, int size, const char* backend = "gloo") {
  // Move-assigned temporaries: GCC 12 reports a false -Wrestrict on inlined operator=(const char*).
  g.pg_id = std::string("0");
  g.desc = std::string("default_pg");
  g.backend = std::string(backend);
  g.rank = rank;
  g.global_rank = rank;
  for (int r = 0; r < size; ++r) g.global_ranks.push_back(r);
}

}  // namespace collie::testing
