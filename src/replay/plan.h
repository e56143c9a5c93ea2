#pragma once
// The replay plan: a job's flight-recorder dumps (collie's JSON and PyTorch's pickles, read by
// debug/analyzer.h's load_dump_dir with the analyzer's limits) rebuilt as groups and, per rank,
// the sequence of collectives and p2p ops to run again through the ProcessGroup API.
//
// What is replayed: a collective every member of its group recorded (matched by group and
// collective sequence number) with one op type, dtype and consistent sizes; a send and a recv
// that pair up (the k-th send from a to b with the k-th recv at b from a, in one group). Each
// rank runs its ops in the order it recorded them. Everything else is left out and said so in
// `notes`, one line per reason: groups with members not replayed, ops the dumps do not size,
// ops not every member recorded (a wrapped ring, or a rank that never got there), mismatches,
// unpaired p2p. What the dumps do not say is assumed and said: PyTorch's dumps record no root
// (root 0) and no reduce op (sum); no dump records all_to_all splits (even when every rank's
// totals allow it, otherwise splits that give every rank its recorded totals).
//
// Mapping ranks: the replay's world rank i plays the dumps' rank `played[i]`: all of them when
// the replay has as many ranks as the dumps, else the ranks asked for (PlanOptions::ranks), in
// which case only groups whose members are all played are replayed.
// Thread safety: build_plan is a pure function; a plan is a plain value.
#include <cstdint>
#include <string>
#include <vector>

#include "comm/op.h"
#include "core/dtype.h"
#include "core/reduce_op.h"
#include "debug/analyzer.h"

namespace collie::replay {

// A group of the recorded job that is replayed.
struct PlanGroup {
  std::string pg_id;
  std::string desc;
  std::vector<int> dump_ranks;    // group rank -> the recorded job's rank
  std::vector<int> replay_ranks;  // group rank -> the replay's world rank
};

// One call replayed: a collective of a group, or a send/recv pair.
struct PlanCall {
  int group = 0;                  // index into ReplayPlan::groups
  OpType type = OpType::Barrier;  // Send for a send/recv pair
  std::string recorded;           // the op as recorded ("_allgather_base")
  uint64_t seq = 0;               // collective sequence number; for a pair, its index (1, 2, ...)
  DType dtype = DType::Float32;
  int root = -1;  // group rank, for ops with a root
  ReduceOp reduce_op = ReduceOp::Sum;
  int src = -1, dst = -1;  // a pair's group ranks
  // The nccl-tests table's view: the perf collective it is measured as ("all_reduce",
  // "alltoallv" for uneven all_to_all, "sendrecv" for a pair), its count and size columns.
  std::string kind;
  int64_t count = 0;
  int64_t bytes = 0;
  bool approximate = false;  // all_to_all splits made up from the ranks' totals
};

// One rank's part in a call.
struct PlanOp {
  size_t call = 0;   // index into ReplayPlan::calls
  size_t entry = 0;  // index of the entry in this rank's dump (oldest first)
  OpType type = OpType::Barrier;
  size_t in_count = 0;   // elements of the input buffer (comm/op.h's conventions)
  size_t out_count = 0;  // elements of a separate output buffer (0: in place, or none)
  int peer = -1;         // group rank (send/recv)
  std::vector<int64_t> input_splits, output_splits;  // all_to_all with uneven totals
  double recorded_ms = -1;                           // the dump's duration; -1 when none
};

struct ReplayPlan {
  int dump_world = 0;
  std::vector<int> played;  // replay rank -> dump rank
  std::vector<PlanGroup> groups;
  std::vector<PlanCall> calls;
  std::vector<std::vector<PlanOp>> ranks;  // per replay rank, in recorded order
  std::vector<std::string> notes;          // what is left out or assumed, and why
  // Equal on two ranks that built the same plan (they must, to replay together).
  uint64_t fingerprint() const;
};

struct PlanOptions {
  int world = 0;           // ranks of the replay (>= 1)
  std::vector<int> ranks;  // dump ranks to play, in replay rank order; empty: all of them
  // The most bytes of buffers a replayed rank may hold at once (--max-bytes): an op's input or
  // output recorded larger is refused as the dump is read, and so is a step (schedule.h) of a
  // rank whose buffers add up to more: a collective's input and output, or the send/recv ops
  // posted together between two collectives.
  int64_t max_bytes = int64_t{1} << 30;
};

// "0-3,6": the --ranks list. Throws InvalidArgument naming `what`.
std::vector<int> parse_rank_list(const std::string& text, const std::string& what);

// Throws InvalidArgument (one line) when the dumps cannot be replayed as asked: a rank count
// that does not match (and the flag that picks ranks), a played rank without a dump, a dump whose
// group lists a rank twice, a rank whose buffers at once exceed max_bytes, ranks whose orders
// block each other (schedule.h's order_conflict), nothing to replay.
ReplayPlan build_plan(const std::vector<RankDump>& dumps, const PlanOptions& o);

}  // namespace collie::replay
