#pragma once
// One flight-recorder entry (debug/analyzer.h's DumpEntry, from collie's JSON or PyTorch's
// pickle) read as a call of collie's ProcessGroup API: which verb, dtype, element counts, root,
// peer, reduce op and recorded duration, or why it cannot be replayed. Entries are untrusted:
// sizes are range-checked here (parse_dump has checked the JSON's shape and nesting).
// Thread safety: pure functions.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "comm/op.h"
#include "core/dtype.h"
#include "debug/analyzer.h"

namespace collie::replay {

// The most elements one recorded tensor list may add up to: larger is not a real buffer.
inline constexpr int64_t kMaxRecordedElements = int64_t{1} << 50;

// The collie verb a recorded op name stands for: torch's names (all_reduce, _allgather_base,
// all_gather_into_tensor_coalesced, _reduce_scatter_base, all_to_all_single,
// all_reduce_barrier, ...) and collie's own. nullopt with `why` set when it has none
// (coalescing markers, group splits, all_gather_v, unknown names).
std::optional<OpType> verb_of(std::string_view recorded, std::string* why);

struct RecordedOp {
  OpType type = OpType::Barrier;
  std::string name;  // as recorded: "_allgather_base"
  DType dtype = DType::Float32;
  int64_t in_total = 0;   // elements over every input tensor
  int64_t out_total = 0;  // elements over every output tensor (0 when none recorded)
  int root = -1;          // world rank, -1 when not recorded
  int peer = -1;          // world rank (send/recv), -1 when not recorded
  std::string reduce_op;  // "" when not recorded
  double duration_ms = -1;
};

// The entry as a call, or nullopt with `why` (one phrase: "coalescing marker 'coalesced'",
// "dtype 'Bool' has no collie equivalent"). Sizes that are not lists of shapes, or add up to
// more than kMaxRecordedElements, are hostile: InvalidArgument ("sizes ... are not ...").
std::optional<RecordedOp> read_entry(const DumpEntry& e, std::string* why);

}  // namespace collie::replay
