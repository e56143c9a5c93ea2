#pragma once
// The arithmetic of DETAIL's agreement (debug/fingerprint_agreement.h): what each rank
// contributes so that one reduction over the group says whether every rank made the same call.
//  - fields_hash: a 64-bit hash of the fields that must match across ranks (those
//    differing_fields compares: op, seq, dtype, count and shape, reduce op, root). The ranks
//    agree on them when the minimum and the maximum of their hashes are equal.
//  - all_to_all splits, checked pair by pair: rank r contributes (mod p = 2^61 - 1)
//        splits_term(r) = a^r * sum_t b^t in_r[t]  -  b^r * sum_s a^s out_r[s]
//    so the sum over the ranks is sum_{s,t} a^s b^t (in_s[t] - out_t[s]): zero when every pair
//    agrees; when some pair differs it is a nonzero polynomial of degree < 2N in (a, b), zero at
//    the op's (a, b) with probability < 2N / p (< 2^-46 at 16,384 ranks; Schwartz-Zippel). (a, b)
//    come from the op's seq, so a coincidence does not repeat on the next op. A rank without
//    explicit splits sends and expects its count from every rank: its term is O(1) (geometric
//    sums); with splits it is O(N), as reading the splits is.
//  - splits_locate, only when the sum is not zero: per sender s, sum_t b^t (in_s[t] - out_t[s]),
//    and per receiver t, sum_s a^s (in_s[t] - out_t[s]); summed over the ranks, their nonzero
//    entries name the senders and the receivers of the pairs that differ (same bound per entry).
// Amounts are taken mod p, so two amounts that differ by a multiple of 2^61 - 1 look equal.
// Thread safety: pure functions.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

#include "debug/fingerprint.h"

namespace collie::agreement {

constexpr uint64_t kPrime = (uint64_t{1} << 61) - 1;

uint64_t add_mod(uint64_t a, uint64_t b);
uint64_t sub_mod(uint64_t a, uint64_t b);
uint64_t mul_mod(uint64_t a, uint64_t b);
uint64_t pow_mod(uint64_t a, uint64_t e);
uint64_t to_field(int64_t v);

// What one rank contributes, and after the reduction what the group agreed on. 32 bytes.
struct Summary {
  uint64_t hash_min = std::numeric_limits<uint64_t>::max();
  uint64_t hash_max = 0;
  uint64_t splits = 0;  // sum of the ranks' splits_term, mod kPrime
  uint64_t ranks = 0;   // how many ranks contributed
  // Every one of n ranks made the same call and the all_to_all pairs agree.
  bool agreed(int n) const {
    return hash_min == hash_max && splits == 0 && ranks == static_cast<uint64_t>(n);
  }
};
static_assert(sizeof(Summary) == 32);

uint64_t fields_hash(const Fingerprint& f);

// Rank `rank`'s term of group size `size` for op `seq`. `in`/`out`: the call's splits (empty =
// `count` elements to and from every rank). Zero for ops without splits.
uint64_t splits_term(const Fingerprint& f, int rank, int size, std::span<const int64_t> in,
                     std::span<const int64_t> out);

// f's summary as rank `rank` contributes it.
Summary summary_of(const Fingerprint& f, int rank, int size, std::span<const int64_t> in,
                   std::span<const int64_t> out);

// AgreementTree::Combine for Summary bytes (len == sizeof(Summary)).
void combine_summaries(uint8_t* acc, const uint8_t* other, size_t len);
// AgreementTree::Combine for vectors of uint64 added mod kPrime.
void add_vectors(uint8_t* acc, const uint8_t* other, size_t len);

// Adds rank `rank`'s share into v (2 * size entries: senders, then receivers).
void splits_locate(const Fingerprint& f, int rank, int size, std::span<const int64_t> in,
                   std::span<const int64_t> out, uint64_t* v);

}  // namespace collie::agreement
