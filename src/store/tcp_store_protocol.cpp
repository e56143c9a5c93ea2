#include "store/tcp_store_protocol.h"

#include <cstring>

#include "core/error.h"

namespace collie::store_wire {
namespace {

template <typename T>
void put_le(Bytes& buf, T v) {
  using U = std::make_unsigned_t<T>;
  U u = static_cast<U>(v);
  for (size_t i = 0; i < sizeof(T); ++i) buf.push_back(static_cast<uint8_t>(u >> (8 * i)));
}

template <typename T>
T get_le(const uint8_t* p) {
  using U = std::make_unsigned_t<T>;
  U u = 0;
  for (size_t i = 0; i < sizeof(T); ++i) u |= static_cast<U>(p[i]) << (8 * i);
  return static_cast<T>(u);
}

}  // namespace

std::string_view op_name(Op op) {
  switch (op) {
    case Op::kSet:
      return "SET";
    case Op::kGet:
      return "GET";
    case Op::kAdd:
      return "ADD";
    case Op::kCheck:
      return "CHECK";
    case Op::kWait:
      return "WAIT";
    case Op::kCompareSet:
      return "COMPARE_SET";
    case Op::kDeleteKey:
      return "DELETE_KEY";
    case Op::kNumKeys:
      return "NUM_KEYS";
    case Op::kAppend:
      return "APPEND";
    case Op::kMultiGet:
      return "MULTI_GET";
    case Op::kMultiSet:
      return "MULTI_SET";
    case Op::kPing:
      return "PING";
    case Op::kAuth:
      return "AUTH";
    case Op::kGather:
      return "GATHER";
    case Op::kCancel:
      return "CANCEL";
  }
  return "UNKNOWN";
}

uint32_t decode_u32(const uint8_t* p) { return get_le<uint32_t>(p); }

Writer& Writer::u8(uint8_t v) {
  buf_.push_back(v);
  return *this;
}
Writer& Writer::u32(uint32_t v) {
  put_le(buf_, v);
  return *this;
}
Writer& Writer::i64(int64_t v) {
  put_le(buf_, v);
  return *this;
}
Writer& Writer::bytes(const uint8_t* p, size_t n) {
  if (n > UINT32_MAX) throw StoreError("store message field larger than 4 GiB");
  put_le(buf_, static_cast<uint32_t>(n));
  buf_.insert(buf_.end(), p, p + n);
  return *this;
}

Writer& Writer::set_u32_at(size_t payload_offset, uint32_t v) {
  if (payload_offset + 4 > payload_size()) throw StoreError("store message patch out of range");
  for (size_t i = 0; i < 4; ++i) {
    buf_[kHeaderBytes + payload_offset + i] = static_cast<uint8_t>(v >> (8 * i));
  }
  return *this;
}

const Bytes& Writer::finish() {
  const size_t n = payload_size();
  if (n > UINT32_MAX) throw StoreError("store message larger than 4 GiB");
  for (size_t i = 0; i < kHeaderBytes; ++i) buf_[i] = static_cast<uint8_t>(n >> (8 * i));
  return buf_;
}

const uint8_t* Reader::take(size_t n) {
  if (static_cast<size_t>(end_ - p_) < n) {
    throw MalformedMessage(
        "malformed store message (truncated field); client and server versions may differ");
  }
  const uint8_t* p = p_;
  p_ += n;
  return p;
}

uint8_t Reader::u8() { return *take(1); }
uint32_t Reader::u32() { return get_le<uint32_t>(take(4)); }
int64_t Reader::i64() { return get_le<int64_t>(take(8)); }
Bytes Reader::bytes() {
  const uint32_t n = u32();
  const uint8_t* p = take(n);
  return Bytes(p, p + n);
}
std::string Reader::str() {
  const uint32_t n = u32();
  const uint8_t* p = take(n);
  return std::string(reinterpret_cast<const char*>(p), n);
}

}  // namespace collie::store_wire
