#pragma once
// PyTorch's flight-recorder dump layout, both ways: collie's recorder written so that
// `python -m torch.distributed.flight_recorder.fr_trace DIR` loads it unchanged, and PyTorch's
// own dumps read into the analyzer's model so `collie analyze` explains a PyTorch job.
//
// The layout (torch/csrc/distributed/c10d/FlightRecorderDetail.hpp, version "2.10"): one pickled
// dict per rank in a file named <prefix><rank> (no extension; the rank is only in the name):
//   version "2.10", comm_lib_version str,
//   pg_config {pg_name: {name, desc, ranks: "[0, 1]" (a str)}},
//   pg_status {str(pg_id): {last_enqueued_collective, last_started_collective,
//                           last_completed_collective}},
//   entries [{frames [], record_id, pg_id (int), process_group (name, desc), thread_name,
//             thread_id (str), collective_seq_id, p2p_seq_id, op_id, profiling_name
//             "<backend>:<op>" ("gloo:send 0->1" with group ranks), time_created_ns,
//             duration_ms (float, completed only), input_sizes [[dims]], input_dtypes ["Float"],
//             output_sizes, output_dtypes, state, time_discovered_started_ns (int|None),
//             time_discovered_completed_ns (int|None), retired, timeout_ms, is_p2p}].
// A p2p entry's collective_seq_id and a collective's p2p_seq_id are 0 (collie counts each kind
// on its own; torch writes the other counter's current value there).
// collie's op names are torch's already (all_reduce, all_gather, reduce_scatter, all_to_all,
// broadcast, reduce, gather, scatter, barrier, send, recv); dtypes use c10's names.
// Thread safety: pure functions.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "debug/analyzer.h"

namespace collie {

class FlightRecorder;
struct FrSnapshot;

inline constexpr const char* kTorchDumpVersion = "2.10";
inline constexpr const char* kTorchDumpPrefix = "nccl_trace_rank_";

// c10::toString(ScalarType) of a dtype: "Float", "Half", "BFloat16", "Long", "Byte", ...
std::string_view torch_dtype_name(DType d);

// The recorder's entries and groups as PyTorch's pickled dump. `backend` replaces the groups'
// backend in profiling_name when not empty; a backend fr_trace does not know (mpi) is written as
// "gloo", the CPU backend it does.
std::string torch_dump_pickle(const FlightRecorder& fr, const std::string& backend = "");
// The same of a snapshot taken earlier (FlightRecorder::full_snapshot).
std::string torch_dump_pickle(const FrSnapshot& snap, const std::string& backend);

// The rank a PyTorch dump's file name carries: its trailing decimal digits ("nccl_trace_rank_3"
// -> 3). nullopt when it has none or they are not a rank below kMaxAnalyzeWorld.
std::optional<int> torch_dump_rank(std::string_view file_name);

// Reads a PyTorch dump (pickle bytes, as torch writes them or as its tests build them: seq ids
// may be decimal strings, dtypes a single string, pg_config ranks a string or a list) of `rank`.
// Untrusted input: throws InvalidArgument (one line) where parse_pickle or parse_dump would.
RankDump parse_torch_dump(std::string_view bytes, int rank);

}  // namespace collie
