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
  std::vector<int64_t> input_splits;  // all_to_all with splits
  std::vector<int64_t> output_splits;

  static Fingerprint of(const OpCall& call, int rank, int group_size);
  Bytes encode() const;
  // Throws DesyncError when the bytes are not a fingerprint (a peer from another version).
  static Fingerprint decode(const Bytes& b);
  static Fingerprint decode(const uint8_t* p, size_t n);

  // DETAIL's side channel sends group rank `dest` a fixed-size record: this fingerprint with the
  // all_to_all splits cut to the pair (what this rank sends to dest, what it expects from dest),
  // so a record's size does not grow with the group. encode_records writes the records for
  // dests 0..n-1 into out (n * kRecordBytes). decode_record, on receiving rank `me` of a group
  // of n, places the pair's splits at index me (the other entries are 0: check_collective must
  // then be told to check only the pairs of me).
  static constexpr size_t kRecordBytes = 160;
  void encode_records(int n, uint8_t* out) const;
  static Fingerprint decode_record(const uint8_t* in, int me, int n);
  bool operator==(const Fingerprint&) const = default;
};

// "all_reduce #57 (float32[1024], sum)", "broadcast #57 (float32[1024], root 0)",
// "send #3 to rank 1 (float32[8], tag 0)".
std::string describe(const Fingerprint& f);
// Human names of the fields in which a and b differ ("op type", "dtype", "shape", ...).
std::vector<std::string> differing_fields(const Fingerprint& a, const Fingerprint& b);

// Compares the fingerprints of every rank of a collective (index = group rank; nullopt = the
// rank never arrived, named by global_ranks[index] or the index when that is empty). Returns the
// DesyncError text, or nullopt when they agree. only_pairs_of >= 0: all_to_all splits are checked
// only for the pairs that include that group rank (fingerprints from decode_record).
std::optional<std::string> check_collective(const std::vector<std::optional<Fingerprint>>& fps,
                                            Millis waited,
                                            const std::vector<int>& global_ranks = {},
                                            int only_pairs_of = -1);
// Compares a send with its matching recv (either may be missing: nullopt).
std::optional<std::string> check_p2p(const std::optional<Fingerprint>& send,
                                     const std::optional<Fingerprint>& recv, int sender,
                                     int receiver, Millis waited);

}  // namespace collie
