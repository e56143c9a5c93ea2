// PickleWriter: protocol 2 opcodes only (PROTO 2, EMPTY_DICT/LIST, MARK, SETITEMS, APPENDS,
// TUPLE, BININT*, LONG1, BINFLOAT, BINUNICODE, NEWTRUE/NEWFALSE, NONE, STOP), which every Python
// 3 reads. Nothing is memoized: values are written as often as they occur.
#include <bit>
#include <cstring>
#include <stdexcept>

#include "debug/pickle.h"

namespace collie {
namespace {

void put_le(std::string& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Length of the valid UTF-8 sequence at s[i], or 0 when it is not one.
size_t utf8_len(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  }
  return n;
}

}  // namespace

PickleWriter::PickleWriter() { out_ = "\x80\x02"; }

void PickleWriter::open(char kind) {
  // Inside a dict or list, MARK precedes the first item (written lazily: an empty container
  // needs none); a tuple always opens with MARK.
  if (!open_.empty()) {
    auto& [parent, items] = open_.back();
    if (parent != 't' && items == 0) out_.push_back('(');
    ++items;
  }
  if (kind == 'd') out_.push_back('}');
  if (kind == 'l') out_.push_back(']');
  if (kind == 't') out_.push_back('(');
  if (kind != 'v') open_.emplace_back(kind, 0);
}

void PickleWriter::close(char kind) {
  if (open_.empty() || open_.back().first != kind) {
    throw std::logic_error("PickleWriter: end does not match the open container");
  }
  const size_t items = open_.back().second;
  open_.pop_back();
  if (kind == 'd' && items % 2 != 0) throw std::logic_error("PickleWriter: dict key without value");
  if (kind == 'd' && items > 0) out_.push_back('u');
  if (kind == 'l' && items > 0) out_.push_back('e');
  if (kind == 't') out_.push_back('t');
}

void PickleWriter::none() {
  open('v');
  out_.push_back('N');
}

void PickleWriter::boolean(bool v) {
  open('v');
  out_.push_back(v ? '\x88' : '\x89');
}

void PickleWriter::integer(int64_t v) {
  open('v');
  if (v >= 0 && v < 0x100) {
    out_.push_back('K');
    put_le(out_, static_cast<uint64_t>(v), 1);
  } else if (v >= 0 && v < 0x10000) {
    out_.push_back('M');
    put_le(out_, static_cast<uint64_t>(v), 2);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    out_.push_back('J');
    put_le(out_, static_cast<uint64_t>(v), 4);
  } else {
    // LONG1: little-endian two's complement, shortest form (as Python's encode_long).
    const auto u = static_cast<uint64_t>(v);
    int n = 8;
    auto byte = [&](int i) { return static_cast<unsigned>((u >> (8 * i)) & 0xff); };
    while (n > 1 && ((byte(n - 1) == 0 && !(byte(n - 2) & 0x80)) ||
                     (byte(n - 1) == 0xff && (byte(n - 2) & 0x80)))) {
      --n;
    }
    out_.push_back('\x8a');
    out_.push_back(static_cast<char>(n));
    put_le(out_, u, n);
  }
}

void PickleWriter::real(double v) {
  open('v');
  out_.push_back('G');
  const auto bits = std::bit_cast<uint64_t>(v);
  for (int i = 7; i >= 0; --i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

void PickleWriter::str(std::string_view v) {
  open('v');
  // Python decodes strictly: a byte that is not UTF-8 (a thread name cut mid-character) is '?'.
  std::string clean;
  clean.reserve(v.size());
  for (size_t i = 0; i < v.size();) {
    const size_t n = utf8_len(v, i);
    if (n == 0) {
      clean.push_back('?');
      ++i;
    } else {
      clean.append(v.substr(i, n));
      i += n;
    }
  }
  out_.push_back('X');
  put_le(out_, clean.size(), 4);
  out_ += clean;
}

void PickleWriter::begin_dict() { open('d'); }
void PickleWriter::end_dict() { close('d'); }
void PickleWriter::begin_list() { open('l'); }
void PickleWriter::end_list() { close('l'); }
void PickleWriter::begin_tuple() { open('t'); }
void PickleWriter::end_tuple() { close('t'); }

void PickleWriter::json(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::object:
      begin_dict();
      for (const auto& [k, x] : v.items()) {
        str(k);
        json(x);
      }
      end_dict();
      return;
    case nlohmann::json::value_t::array:
      begin_list();
      for (const auto& x : v) json(x);
      end_list();
      return;
    case nlohmann::json::value_t::string:
      return str(v.get_ref<const std::string&>());
    case nlohmann::json::value_t::boolean:
      return boolean(v.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return integer(v.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      if (v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return real(v.get<double>());
      return integer(static_cast<int64_t>(v.get<uint64_t>()));
    case nlohmann::json::value_t::number_float:
      return real(v.get<double>());
    default:
      return none();
  }
}

std::string PickleWriter::finish() {
  if (!open_.empty()) throw std::logic_error("PickleWriter: finish() with a container still open");
  out_.push_back('.');
  return std::move(out_);
}

}  // namespace collie
