// torch_dump_pickle: FlightRecorder -> PyTorch's pickled dump (layout in torch_dump.h).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "debug/flight_recorder.h"
#include "debug/pickle.h"
#include "debug/torch_dump.h"

namespace collie {
namespace {

// fr_trace's Op() accepts these profiling_name prefixes (newest torch; older: nccl, xccl).
bool torch_knows_backend(std::string_view b) {
  return b == "nccl" || b == "ncclx" || b == "gloo" || b == "xccl";
}

int group_rank_of(const GroupTrace& g, int global_rank) {
  auto it = std::find(g.global_ranks.begin(), g.global_ranks.end(), global_rank);
  return it == g.global_ranks.end() ? global_rank : static_cast<int>(it - g.global_ranks.begin());
}

std::string profiling_name(const FrEntry& e, const std::string& backend_override) {
  const GroupTrace& g = *e.group;
  std::string backend = backend_override.empty() ? g.backend : backend_override;
  if (!torch_knows_backend(backend)) backend = "gloo";
  const std::string_view op = op_name(e.op);
  // torch names the ends of a send/recv by group rank; collie's entry holds the global peer.
  if (e.op == OpType::Send) {
    return fmt::format("{}:{} {}->{}", backend, op, g.rank, group_rank_of(g, e.peer));
  }
  if (e.op == OpType::Recv) {
    return fmt::format("{}:{} {}<-{}", backend, op, g.rank, group_rank_of(g, e.peer));
  }
  return fmt::format("{}:{}", backend, op);
}

std::string ranks_text(const std::vector<int>& ranks) {
  return fmt::format("[{}]", fmt::join(ranks, ", "));
}

void sizes(PickleWriter& w, const FrEntry::Sizes& s) {
  w.begin_list();
  if (s.present) {
    w.begin_list();
    for (int i = 0; i < s.ndim; ++i) w.integer(s.dims[i]);
    w.end_list();
  }
  w.end_list();
}

void dtypes(PickleWriter& w, const FrEntry::Sizes& s) {
  w.begin_list();
  if (s.present) w.str(torch_dtype_name(s.dtype));
  w.end_list();
}

void ns_or_none(PickleWriter& w, int64_t ns) {
  if (ns == 0) {
    w.none();
  } else {
    w.integer(ns);
  }
}

void entry(PickleWriter& w, const FrEntry& e, int64_t pg_uid, const std::string& backend) {
  auto key = [&](const char* k) { w.str(k); };
  w.begin_dict();
  key("frames");
  w.begin_list();
  w.end_list();
  key("record_id");
  w.integer(static_cast<int64_t>(e.record_id));
  key("pg_id");
  w.integer(pg_uid);
  key("process_group");
  w.begin_tuple();
  w.str(e.group->pg_id);
  w.str(e.group->desc);
  w.end_tuple();
  key("thread_name");
  w.str(e.thread_name);
  key("thread_id");
  w.str(std::to_string(e.thread_id));
  key("collective_seq_id");
  w.integer(static_cast<int64_t>(e.collective_seq_id));
  key("p2p_seq_id");
  w.integer(static_cast<int64_t>(e.p2p_seq_id));
  key("op_id");
  w.integer(static_cast<int64_t>(e.op_id));
  key("profiling_name");
  w.str(profiling_name(e, backend));
  key("time_created_ns");
  w.integer(e.time_created_ns);
  // torch retires an entry only when its work completes: one that failed (timed out, errored)
  // is still in flight in torch's dumps, and written so here (collie's JSON says "failed").
  const bool completed = e.state == FrState::Completed && !e.failed;
  const FrState state = completed || !e.failed ? e.state : FrState::Started;
  if (completed && e.time_discovered_completed_ns != 0) {
    key("duration_ms");
    w.real(static_cast<double>(e.time_discovered_completed_ns - e.time_created_ns) / 1e6);
  }
  key("input_sizes");
  sizes(w, e.input);
  key("input_dtypes");
  dtypes(w, e.input);
  key("output_sizes");
  sizes(w, e.output);
  key("output_dtypes");
  dtypes(w, e.output);
  key("state");
  w.str(fr_state_name(state));
  key("time_discovered_started_ns");
  ns_or_none(w, e.time_discovered_started_ns);
  key("time_discovered_completed_ns");
  ns_or_none(w, completed ? e.time_discovered_completed_ns : 0);
  key("retired");
  w.boolean(e.retired && !e.failed);
  key("timeout_ms");
  w.integer(e.timeout_ms);
  key("is_p2p");
  w.boolean(e.is_p2p);
  w.end_dict();
}

}  // namespace

std::string_view torch_dtype_name(DType d) {
  switch (d) {
    case DType::Int8:
      return "Char";
    case DType::UInt8:
      return "Byte";
    case DType::Int32:
      return "Int";
    case DType::UInt32:
      return "UInt32";
    case DType::Int64:
      return "Long";
    case DType::UInt64:
      return "UInt64";
    case DType::Float16:
      return "Half";
    case DType::BFloat16:
      return "BFloat16";
    case DType::Float32:
      return "Float";
    case DType::Float64:
      return "Double";
  }
  return "Undefined";
}

std::string torch_dump_pickle(const FlightRecorder& fr, const std::string& backend) {
  return torch_dump_pickle(fr.full_snapshot(), backend);
}

std::string torch_dump_pickle(const FrSnapshot& snap, const std::string& backend) {
  const std::vector<FrEntry>& entries = snap.entries;
  // torch's pg_id is a per-process integer uid; collie's groups are numbered in creation order.
  std::map<const GroupTrace*, int64_t> uid;
  for (size_t i = 0; i < snap.groups.size(); ++i) {
    uid[snap.groups[i].group.get()] = static_cast<int64_t>(i);
  }
  PickleWriter w;
  w.begin_dict();
  w.str("version");
  w.str(kTorchDumpVersion);
  w.str("comm_lib_version");
  w.str("");
  w.str("pg_config");
  w.begin_dict();
  for (const FrGroupSnapshot& gs : snap.groups) {
    const GroupTrace* g = gs.group.get();
    w.str(g->pg_id);
    w.begin_dict();
    w.str("name");
    w.str(g->pg_id);
    w.str("desc");
    w.str(g->desc);
    w.str("ranks");
    w.str(ranks_text(g->global_ranks));
    w.end_dict();
  }
  w.end_dict();
  w.str("pg_status");
  w.begin_dict();
  for (const FrGroupSnapshot& gs : snap.groups) {
    w.str(std::to_string(uid[gs.group.get()]));
    w.begin_dict();
    w.str("last_enqueued_collective");
    w.integer(static_cast<int64_t>(gs.last_enqueued_collective));
    w.str("last_started_collective");
    w.integer(static_cast<int64_t>(gs.last_started_collective));
    w.str("last_completed_collective");
    w.integer(static_cast<int64_t>(gs.last_completed_collective));
    w.end_dict();
  }
  w.end_dict();
  w.str("entries");
  w.begin_list();
  for (const FrEntry& e : entries) entry(w, e, uid.count(e.group) ? uid[e.group] : 0, backend);
  w.end_list();
  w.end_dict();
  return w.finish();
}

}  // namespace collie
