#pragma once
// Wire format of the TcpStore: every message is a frame `u32 length (little endian) | payload`.
// A request payload starts with the Op byte and the u32 request id the client chose; a reply
// payload starts with the id of the request it answers and the Status byte. Replies may come in
// any order (a parked wait does not hold up the connection's later requests), so several threads
// share one connection. The rest is a sequence of fields (u8, u32, i64 little endian; byte
// strings as u32 length + bytes).
// Frames longer than the peer's max_message_bytes are rejected before anything is allocated.
// Writer and Reader are plain values, not thread-safe.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
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
  // name, u32 member, u32 members, value, u8 read (Store::GatherRead), i64 timeout ms. Reply:
  // u8 1 | u32 n | n values (n = members for a member that reads, else 0), or on timeout
  // u8 0 | u32 k | k x (u32 first, u32 last): the ranges of members still missing.
  kGather,
  // u32 id of an earlier request of this connection that the client stopped waiting for; no
  // reply (a parked request is dropped unanswered).
  kCancel,
};

// kInvalid: the request broke a contract (a gather member out of range or twice); the client
// raises InvalidArgument with the message, kError raises StoreError.
enum class Status : uint8_t { kOk = 0, kError = 1, kTimeout = 2, kInvalid = 3 };

inline constexpr size_t kHeaderBytes = 4;
// The request id of the AUTH frame that opens every connection.
inline constexpr uint32_t kAuthId = 0;

std::string_view op_name(Op op);

// What a Reader throws when a payload is not a well-formed message: the peer is broken or
// hostile, so the server cuts it off rather than answering and reading on.
class MalformedMessage : public StoreError {
 public:
  using StoreError::StoreError;
};

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
  // The payload written so far (without the length header).
  std::span<const uint8_t> body() const {
    return {buf_.data() + kHeaderBytes, buf_.size() - kHeaderBytes};
  }
  // Overwrites the u32 at `payload_offset` (a field written earlier as a placeholder).
  Writer& set_u32_at(size_t payload_offset, uint32_t v);
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
