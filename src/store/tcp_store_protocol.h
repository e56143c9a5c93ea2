#pragma once
// Wire format of the TcpStore: every message is a frame `u32 length (little endian) | payload`.
// A request payload starts with the Op byte, a response payload with the Status byte; the rest
// is a sequence of fields (u8, u32, i64 little endian; byte strings as u32 length + bytes).
// Frames longer than the peer's max_message_bytes are rejected before anything is allocated.
// Writer and Reader are plain values, not thread-safe.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/store.h"

namespace collie::store_wire {

enum class Op : uint8_t {
  kSet = 1,
  kGet,
  kAdd,
  kCheck,
  kWait,
  kCompareSet,
  kDeleteKey,
  kNumKeys,
  kAppend,
  kMultiGet,
  kMultiSet,
  kPing,
  // First frame of every connection: the store secret (empty when the client has none). A server
  // with a secret answers kError "store authentication failed ..." and closes on a mismatch;
  // otherwise kOk followed by one byte: 1 when it requires a secret, 0 when it serves anyone.
  kAuth,
};

enum class Status : uint8_t { kOk = 0, kError = 1, kTimeout = 2 };

inline constexpr size_t kHeaderBytes = 4;

std::string_view op_name(Op op);

// Builds one frame; the length header is filled in by finish().
class Writer {
 public:
  Writer() : buf_(kHeaderBytes, 0) {}
  Writer& u8(uint8_t v);
  Writer& u32(uint32_t v);
  Writer& i64(int64_t v);
  Writer& bytes(const uint8_t* p, size_t n);
  Writer& bytes(const Bytes& b) { return bytes(b.data(), b.size()); }
  Writer& str(std::string_view s) {
    return bytes(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  }
  size_t payload_size() const { return buf_.size() - kHeaderBytes; }
  // Writes the header and returns the whole frame.
  const Bytes& finish();

 private:
  Bytes buf_;
};

// Parses one payload. Every read is bounds-checked; running past the end throws StoreError
// ("malformed store message"), so a corrupt length can never cause a large allocation.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), end_(p + n) {}
  uint8_t u8();
  uint32_t u32();
  int64_t i64();
  Bytes bytes();
  std::string str();
  bool done() const { return p_ == end_; }

 private:
  const uint8_t* take(size_t n);
  const uint8_t* p_;
  const uint8_t* end_;
};

uint32_t decode_u32(const uint8_t* p);

}  // namespace collie::store_wire
