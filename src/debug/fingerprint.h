#pragma once
// Fingerprint of one op as DETAIL checks compare it across ranks: sequence number, op, dtype,
// per-rank element count and shape, reduce op, root, and for send/recv the peer and tag.
// all_to_all with explicit splits also carries its splits (checked pairwise: what rank r sends
// to q must be what q expects from r). Encoded into a small byte string for the store.
// Thread safety: plain values and pure functions.
#include <optional>
#include <string>
#include <vector>

#include "comm/op.h"
#include "store/store.h"

namespace collie {

struct Fingerprint {
  int rank = -1;  // group rank that produced it
  uint64_t seq = 0;
  OpType op = OpType::Barrier;
  DType dtype = DType::Float32;
  bool has_tensor = false;
  uint64_t count = 0;  // per-rank element count (per_rank_count)
  Shape shape;         // shape of the per-rank tensor
  ReduceOp reduce_op = ReduceOp::Sum;
  int root = -1;  // group rank
  int peer = -1;  // group rank
  int tag = 0;
  // all_to_all called with explicit splits (alltoallv): the ranks' element counts may then
  // differ, and the pairs' amounts are compared instead.
  bool has_splits = false;
  std::vector<int64_t> input_splits;  // all_to_all with splits (empty when not copied)
  std::vector<int64_t> output_splits;

  // copy_splits = false leaves input_splits/output_splits empty (has_splits still says whether
  // the call had them), so building a fingerprint never allocates: DETAIL's agreement reads the
  // splits from the call itself.
  static Fingerprint of(const OpCall& call, int rank, int group_size, bool copy_splits = true);
  Bytes encode() const;
  // Throws DesyncError when the bytes are not a fingerprint (a peer from another version).
  static Fingerprint decode(const Bytes& b);
  static Fingerprint decode(const uint8_t* p, size_t n);
  bool operator==(const Fingerprint&) const = default;
};

// "all_reduce #57 (float32[1024], sum)", "broadcast #57 (float32[1024], root 0)",
// "send #3 to rank 1 (float32[8], tag 0)".
std::string describe(const Fingerprint& f);
// Human names of the fields in which a and b differ ("op type", "dtype", "shape", ...).
std::vector<std::string> differing_fields(const Fingerprint& a, const Fingerprint& b);

// Compares the fingerprints of every rank of a collective (index = group rank; nullopt = the
// rank never arrived, named by global_ranks[index] or the index when that is empty), all_to_all
// splits pair by pair (every fingerprint with has_splits must carry all of its splits). Returns
// the DesyncError text, or nullopt when they agree.
std::optional<std::string> check_collective(const std::vector<std::optional<Fingerprint>>& fps,
                                            Millis waited,
                                            const std::vector<int>& global_ranks = {});
// The same text from the fields alone: ranks grouped by what they called, the missing ones, and,
// when every rank came and called the same, `splits_errors` (split_error() lines, found by the
// caller). nullopt when there is nothing to report.
std::optional<std::string> collective_mismatch(const std::vector<std::optional<Fingerprint>>& fps,
                                               Millis waited, const std::vector<int>& global_ranks,
                                               const std::vector<std::string>& splits_errors);
// "rank 0 sends 3 elements to rank 1, which expects 2" (global ranks).
std::string split_error(int sender, int64_t sent, int receiver, int64_t expected);
// Compares a send with its matching recv (either may be missing: nullopt).
std::optional<std::string> check_p2p(const std::optional<Fingerprint>& send,
                                     const std::optional<Fingerprint>& recv, int sender,
                                     int receiver, Millis waited);

}  // namespace collie
