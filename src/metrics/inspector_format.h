#pragma once
// NCCL Inspector's vocabulary (NVIDIA/nccl plugins/profiler/inspector, Prometheus output), so
// collie's /metrics/inspector series read like Inspector's and its Grafana template works:
// operation names, the message size Inspector counts, its bucket labels and its per-op bus
// bandwidth. Pure functions; thread-safe.
#include <cstdint>
#include <string>
#include <string_view>

#include "comm/op.h"

namespace collie {

// Inspector's name of the op: "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce",
// "Send", "Recv". "" for ops Inspector computes no bandwidth for (all_to_all, gather, scatter,
// barrier): those are not exported as Inspector series.
std::string_view inspector_op_name(OpType op);

// Bytes as Inspector counts them (count x type size of the NCCL call): the per-rank buffer,
// i.e. the input on this rank except reduce_scatter, whose count is the per-rank output
// (input / nranks). REQUIRES: nranks >= 1.
uint64_t inspector_message_bytes(OpType op, uint64_t input_bytes, int nranks);

// The unit a size is written in: 0..4 for B, KB, MB, GB, TB (1024-based): the largest with
// bytes / 1024^unit >= 1, at most TB; 0 for 0.
int inspector_size_unit(uint64_t bytes);

// The bucket a size falls in, as its lower bound in bytes: floor(v) x 1024^u where v = bytes /
// 1024^u, u the largest unit (B, KB, MB, GB, TB; 1024-based, at most TB) with v >= 1. 0 -> 0.
uint64_t inspector_size_bucket(uint64_t bytes);

// Inspector's message_size label of a size: "0B" for 0, else "<floor(v)>-<floor(v)+1><unit>",
// e.g. 1023 -> "1023-1024B", 1024 -> "1-2KB", 1 MiB - 1 -> "1023-1024KB", 4 GiB -> "4-5GB",
// 2 PiB -> "2048-2049TB".
std::string inspector_message_size(uint64_t bytes);

// Bus bandwidth (GB/s, 1e9 bytes) of one op as Inspector computes it from message bytes and
// execution time: traffic = bytes (x nranks for all_gather / reduce_scatter), algbw = traffic /
// time, busbw = algbw x factor (all_reduce 2(n-1)/n; all_gather, reduce_scatter (n-1)/n;
// broadcast, reduce, send, recv 1) — the nccl-tests definitions. 0 when exec_us <= 0.
double inspector_bus_bandwidth_gbs(OpType op, uint64_t message_bytes, int nranks, double exec_us);

}  // namespace collie
