#include "debug/agreement_math.h"

#include <algorithm>
#include <cstring>

#include "comm/op.h"

namespace collie::agreement {
namespace {

// splitmix64's finalizer: a bijection of 64-bit words that mixes every input bit into every
// output bit.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

struct Hasher {
  uint64_t h = 0x6a09e667f3bcc908ULL;
  uint64_t n = 0;
  // A chain of bijections: two word sequences of the same length that differ anywhere hash
  // differently; sequences of different lengths (the length goes in last) collide like random.
  void put(uint64_t w) {
    h = mix64(h ^ w);
    ++n;
  }
  uint64_t done() {
    put(n);
    return h;
  }
};

// The op's two evaluation points, in [2, p - 2] (so b - 1 and a - 1 are invertible).
uint64_t point(uint64_t seq, uint64_t salt) { return 2 + mix64(seq ^ salt) % (kPrime - 3); }
uint64_t point_a(const Fingerprint& f) { return point(f.seq, 0x243f6a8885a308d3ULL); }
uint64_t point_b(const Fingerprint& f) { return point(f.seq, 0x13198a2e03707344ULL); }

// sum_{i < n} x^i = (x^n - 1) / (x - 1), x != 1.
uint64_t geometric(uint64_t x, int n) {
  return mul_mod(sub_mod(pow_mod(x, static_cast<uint64_t>(n)), 1),
                 pow_mod(sub_mod(x, 1), kPrime - 2));
}

// sum_i x^i * amount(i) over the group, where amount is `splits` or, when empty, `count`.
uint64_t weighted(std::span<const int64_t> splits, uint64_t count, uint64_t x, int n) {
  if (splits.empty()) return mul_mod(count % kPrime, geometric(x, n));
  uint64_t acc = 0;  // Horner, from the last rank down
  for (size_t i = std::min(splits.size(), static_cast<size_t>(n)); i-- > 0;) {
    acc = add_mod(mul_mod(acc, x), to_field(splits[i]));
  }
  return acc;
}

bool has_pairs(const Fingerprint& f) { return traits(f.op).splits; }

}  // namespace

uint64_t add_mod(uint64_t a, uint64_t b) {
  const uint64_t s = a + b;  // < 2^62: no overflow
  return s >= kPrime ? s - kPrime : s;
}

uint64_t sub_mod(uint64_t a, uint64_t b) { return a >= b ? a - b : a + kPrime - b; }

uint64_t mul_mod(uint64_t a, uint64_t b) {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  const uint64_t r = (static_cast<uint64_t>(p) & kPrime) + static_cast<uint64_t>(p >> 61);
  return r >= kPrime ? r - kPrime : r;
}

uint64_t pow_mod(uint64_t a, uint64_t e) {
  uint64_t r = 1;
  for (; e > 0; e >>= 1) {
    if (e & 1) r = mul_mod(r, a);
    a = mul_mod(a, a);
  }
  return r;
}

uint64_t to_field(int64_t v) {
  const int64_t m = v % static_cast<int64_t>(kPrime);
  return static_cast<uint64_t>(m < 0 ? m + static_cast<int64_t>(kPrime) : m);
}

uint64_t fields_hash(const Fingerprint& f) {
  Hasher h;
  h.put(f.seq);
  h.put(static_cast<uint64_t>(f.op));
  h.put(f.has_tensor);
  if (f.has_tensor) h.put(static_cast<uint64_t>(f.dtype));
  // As differing_fields: with explicit splits the ranks' counts may differ (the pairs are
  // checked instead).
  const bool uneven = has_pairs(f) && f.has_splits;
  h.put(uneven);
  if (!uneven) {
    h.put(f.count);
    h.put(f.shape.ndim);
    for (int i = 0; i < f.shape.ndim; ++i) h.put(static_cast<uint64_t>(f.shape.dims[i]));
  }
  if (has_reduce_op(f.op)) h.put(static_cast<uint64_t>(f.reduce_op));
  if (has_root(f.op)) h.put(static_cast<uint64_t>(static_cast<int64_t>(f.root)));
  return h.done();
}

uint64_t splits_term(const Fingerprint& f, int rank, int size, std::span<const int64_t> in,
                     std::span<const int64_t> out) {
  if (!has_pairs(f)) return 0;
  const uint64_t a = point_a(f), b = point_b(f);
  const auto r = static_cast<uint64_t>(rank);
  return sub_mod(mul_mod(pow_mod(a, r), weighted(in, f.count, b, size)),
                 mul_mod(pow_mod(b, r), weighted(out, f.count, a, size)));
}

Summary summary_of(const Fingerprint& f, int rank, int size, std::span<const int64_t> in,
                   std::span<const int64_t> out) {
  Summary s;
  s.hash_min = s.hash_max = fields_hash(f);
  s.splits = splits_term(f, rank, size, in, out);
  s.ranks = 1;
  return s;
}

void combine_summaries(uint8_t* acc, const uint8_t* other, size_t len) {
  (void)len;
  Summary a, b;
  std::memcpy(&a, acc, sizeof(a));
  std::memcpy(&b, other, sizeof(b));
  a.hash_min = std::min(a.hash_min, b.hash_min);
  a.hash_max = std::max(a.hash_max, b.hash_max);
  a.splits = add_mod(a.splits, b.splits);
  a.ranks += b.ranks;
  std::memcpy(acc, &a, sizeof(a));
}

void add_vectors(uint8_t* acc, const uint8_t* other, size_t len) {
  for (size_t i = 0; i + sizeof(uint64_t) <= len; i += sizeof(uint64_t)) {
    uint64_t x, y;
    std::memcpy(&x, acc + i, sizeof(x));
    std::memcpy(&y, other + i, sizeof(y));
    // A peer's garbage must not break the field: reduce first.
    x = add_mod(x % kPrime, y % kPrime);
    std::memcpy(acc + i, &x, sizeof(x));
  }
}

void splits_locate(const Fingerprint& f, int rank, int size, std::span<const int64_t> in,
                   std::span<const int64_t> out, uint64_t* v) {
  if (!has_pairs(f)) return;
  const uint64_t a = point_a(f), b = point_b(f);
  const auto n = static_cast<size_t>(size), me = static_cast<size_t>(rank);
  auto amount = [&](std::span<const int64_t> s, size_t i) {
    return s.empty() ? f.count % kPrime : i < s.size() ? to_field(s[i]) : 0;
  };
  // Sender entries: this rank's own row in, every sender's amount to this rank out.
  v[me] = add_mod(v[me], weighted(in, f.count, b, size));
  const uint64_t b_me = pow_mod(b, me);
  for (size_t s = 0; s < n; ++s) v[s] = sub_mod(v[s], mul_mod(b_me, amount(out, s)));
  // Receiver entries: what this rank expects out, what it sends every receiver in.
  v[n + me] = sub_mod(v[n + me], weighted(out, f.count, a, size));
  const uint64_t a_me = pow_mod(a, me);
  for (size_t t = 0; t < n; ++t) v[n + t] = add_mod(v[n + t], mul_mod(a_me, amount(in, t)));
}

}  // namespace collie::agreement
