#include "core/size.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/printable.h"

namespace collie {
namespace {

// A plain decimal: digits with an optional fraction and exponent, nothing else (from_chars
// would also take "inf", "nan" and a leading '-').
bool plain_decimal(std::string_view s) {
  size_t i = 0, digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == start) return false;
  }
  return i == s.size();
}

// Parses the plain decimal `s`; false when it is not one or is not finite.
bool to_double(std::string_view s, double& out) {
  if (!plain_decimal(s)) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(out);
}

// Bytes per unit of a size's suffix, -1 when it is none: "" or B; K, KB, KiB; M...; G...; T...
// (case-insensitive, as nccl-tests reads k/m/g).
double unit_bytes(std::string_view suffix) {
  std::string s(suffix);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.empty() || s == "b") return 1;
  static constexpr std::string_view kLetters = "kmgt";
  const size_t power = kLetters.find(s[0]);
  if (power == std::string_view::npos) return -1;
  const std::string_view rest = std::string_view(s).substr(1);
  if (!rest.empty() && rest != "b" && rest != "ib") return -1;
  return std::ldexp(1.0, 10 * static_cast<int>(power + 1));
}

}  // namespace

std::string size_label(int64_t bytes) {
  static const char* kUnits[] = {"", "K", "M", "G", "T"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:g}{}", v, kUnits[u]);
}

std::string memory_label(int64_t bytes) {
  const auto b = static_cast<double>(bytes);
  if (b < 0) return "?";
  return b < (1 << 20) ? fmt::format("{:.1f} KiB", b / 1024)
                       : fmt::format("{:.1f} MiB", b / (1 << 20));
}

int64_t parse_byte_size(std::string_view text, std::string_view what, int64_t max) {
  size_t num_end = text.size();
  while (num_end > 0 && !(text[num_end - 1] >= '0' && text[num_end - 1] <= '9') &&
         text[num_end - 1] != '.') {
    --num_end;
  }
  const double unit = unit_bytes(text.substr(num_end));
  double num = 0;
  if (unit < 0 || !to_double(text.substr(0, num_end), num)) {
    throw InvalidArgument(
        fmt::format("{} {} is not a size (use e.g. 8, 64K, 4M, 1G)", what, quote(text)));
  }
  const double bytes = num * unit;
  if (!(bytes <= static_cast<double>(max))) {
    throw InvalidArgument(fmt::format("{} {} is larger than {} bytes", what, quote(text), max));
  }
  return static_cast<int64_t>(bytes);
}

double check_finite(double v, std::string_view what, double lo, double hi) {
  if (!(v >= lo && v <= hi)) {  // false for NaN
    throw InvalidArgument(fmt::format("{} {} is not a number in [{}, {}]", what, v, lo, hi));
  }
  return v;
}

double parse_finite(std::string_view text, std::string_view what, double lo, double hi) {
  double v = 0;
  if (!to_double(text, v) || !(v >= lo && v <= hi)) {
    throw InvalidArgument(
        fmt::format("{} {} is not a number in [{}, {}]", what, quote(text), lo, hi));
  }
  return v;
}

}  // namespace collie
