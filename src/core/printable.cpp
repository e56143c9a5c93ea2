#include "core/printable.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <utility>

namespace collie {
namespace {

// Length of the valid UTF-8 sequence starting at s[i] and its code point; 0 when invalid
// (truncated, overlong, a surrogate, above U+10FFFF, a stray continuation byte).
size_t utf8_at(std::string_view s, size_t i, uint32_t* cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  size_t n = 0;
  uint32_t v = 0, min = 0;
  if (c < 0x80) {
    *cp = c;
    return 1;
  } else if ((c & 0xe0) == 0xc0) {
    n = 2, v = c & 0x1f, min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3, v = c & 0x0f, min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4, v = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xc0) != 0x80) return 0;
    v = (v << 6) | (b(k) & 0x3f);
  }
  if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
  *cp = v;
  return n;
}

bool is_bidi_control(uint32_t cp) {
  return cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

// Escapes s into at most `limit` bytes of output, never cutting an escape or a character;
// *consumed says how much of s that covered.
std::string escape(std::string_view s, bool keep_newlines, size_t limit = SIZE_MAX,
                   size_t* consumed = nullptr) {
  std::string out;
  out.reserve(std::min(s.size(), limit));
  size_t i = 0;
  while (i < s.size()) {
    uint32_t cp = 0;
    size_t n = utf8_at(s, i, &cp);
    const size_t before = out.size();
    if (n == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i]));
      n = 1;
    } else if ((cp < 0x20 && !(keep_newlines && cp == '\n')) || (cp >= 0x7f && cp <= 0x9f)) {
      out += fmt::format("\\x{:02x}", cp);
    } else if (is_bidi_control(cp)) {
      out += fmt::format("\\u{{{:04x}}}", cp);
    } else {
      out.append(s.substr(i, n));
    }
    if (out.size() > limit) {
      out.resize(before);
      break;
    }
    i += n;
  }
  if (consumed != nullptr) *consumed = i;
  return out;
}

}  // namespace

// Most text (every field of a dump) is plain printable ASCII: kept as it is, without the
// per-character walk, which was a tenth of `collie analyze`'s time.
static bool plain_ascii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f;
  });
}

std::string printable(std::string_view text) {
  return plain_ascii(text) ? std::string(text) : escape(text, false);
}

std::string printable(std::string&& text) {
  return plain_ascii(text) ? std::move(text) : escape(text, false);
}

std::string printable_lines(std::string_view text) { return escape(text, true); }

std::string quote(std::string_view text, size_t max_chars) {
  size_t used = 0;
  std::string body = escape(text, false, max_chars, &used);
  if (used == text.size()) return "'" + body + "'";
  body = escape(text, false, max_chars > 3 ? max_chars - 3 : 0, &used);
  return fmt::format("'{}...' ({} bytes)", body, text.size());
}

}  // namespace collie
