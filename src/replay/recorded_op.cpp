#include "replay/recorded_op.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/printable.h"

namespace collie::replay {
namespace {

using nlohmann::json;

// Elements over a list of shapes ("[[4, 4], [8]]"), or -1 when it is not one or is too large.
int64_t total_elements(const std::string& text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return -1;
  int64_t total = 0;
  for (const json& shape : j) {
    if (!shape.is_array()) return -1;
    int64_t n = 1;
    for (const json& d : shape) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) return -1;
      const auto dim = d.get<int64_t>();
      if (dim != 0 && n > kMaxRecordedElements / dim) return -1;
      n *= dim;
    }
    total += n;
    if (total > kMaxRecordedElements) return -1;
  }
  return total;
}

// The first dtype of a dtype list ("[\"float32\"]"), "" when the list is empty.
std::string first_dtype(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_array() && !j.empty() && j[0].is_string()) return j[0].get<std::string>();
  if (j.is_string()) return j.get<std::string>();
  return "";
}

}  // namespace

std::optional<OpType> verb_of(std::string_view name, std::string* why) {
  static const std::map<std::string_view, OpType> kVerbs = {
      {"all_reduce", OpType::AllReduce},
      {"allreduce", OpType::AllReduce},
      {"allreduce_coalesced", OpType::AllReduce},
      {"all_reduce_coalesced", OpType::AllReduce},
      {"broadcast", OpType::Broadcast},
      {"_broadcast_oop", OpType::Broadcast},
      {"reduce", OpType::Reduce},
      {"_reduce_oop", OpType::Reduce},
      {"all_gather", OpType::AllGather},
      {"allgather", OpType::AllGather},
      {"_allgather_base", OpType::AllGather},
      {"_all_gather_base", OpType::AllGather},
      {"all_gather_into_tensor", OpType::AllGather},
      {"all_gather_single", OpType::AllGather},
      {"all_gather_into_tensor_coalesced", OpType::AllGather},
      {"ALLGATHER_coalesced", OpType::AllGather},
      {"reduce_scatter", OpType::ReduceScatter},
      {"_reduce_scatter_base", OpType::ReduceScatter},
      {"reduce_scatter_single", OpType::ReduceScatter},
      {"reduce_scatter_tensor", OpType::ReduceScatter},
      {"reduce_scatter_tensor_coalesced", OpType::ReduceScatter},
      {"REDUCE_SCATTER_coalesced", OpType::ReduceScatter},
      {"gather", OpType::Gather},
      {"scatter", OpType::Scatter},
      {"all_to_all", OpType::AllToAll},
      {"alltoall", OpType::AllToAll},
      {"alltoall_base", OpType::AllToAll},
      {"all_to_all_single", OpType::AllToAll},
      {"all_to_all_v_single", OpType::AllToAll},
      {"barrier", OpType::Barrier},
      {"all_reduce_barrier", OpType::Barrier},
      {"send", OpType::Send},
      {"recv", OpType::Recv},
  };
  const auto it = kVerbs.find(name);
  if (it != kVerbs.end()) return it->second;
  if (why != nullptr) {
    if (name == "coalesced")
      *why = "coalescing marker 'coalesced' (its ops are recorded on their own)";
    else if (name == "split" || name == "new_window")
      *why = fmt::format("{} makes a group, it moves no data", quote(name));
    else if (name == "all_gather_v" || name == "reduce_scatter_v")
      *why = fmt::format("{} has per-rank sizes collie's API has no verb for", quote(name));
    else
      *why = fmt::format("unknown op {}", quote(name));
  }
  return std::nullopt;
}

std::optional<RecordedOp> read_entry(const DumpEntry& e, std::string* why) {
  const std::optional<OpType> verb = verb_of(e.op, why);
  if (!verb) return std::nullopt;
  RecordedOp r;
  r.type = *verb;
  r.name = e.op;
  r.root = e.root;
  r.peer = e.peer;
  r.reduce_op = e.reduce_op;
  r.duration_ms = e.duration_ms;
  r.in_total = total_elements(e.sizes);
  r.out_total = total_elements(e.output_sizes);
  if (r.in_total < 0 || r.out_total < 0) {
    throw InvalidArgument(
        fmt::format("sizes {} / {} are not lists of shapes of at most 2^50 elements",
                    quote(e.sizes), quote(e.output_sizes)));
  }
  if (r.type == OpType::Barrier) return r;
  std::string dt = first_dtype(e.dtypes);
  if (dt.empty()) dt = first_dtype(e.output_dtypes);
  if (dt.empty()) {
    *why = r.in_total == 0 && r.out_total == 0 ? "no sizes recorded" : "no dtype recorded";
    return std::nullopt;
  }
  const auto d = parse_dtype(dt);
  if (!d) {
    // The dtype was read back out of its JSON text: escapes such as \u0001 are raw again.
    *why = fmt::format("dtype {} has no collie equivalent", quote(dt));
    return std::nullopt;
  }
  r.dtype = *d;
  return r;
}

}  // namespace collie::replay
