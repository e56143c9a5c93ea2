#pragma once
// The one parser of byte sizes written by people (flags, specs, result files): "8", "1.5M",
// "64K", "4MiB", "1G". Units are binary (K = KiB = 1024, M/MiB, G/GiB; k/m/g accepted), the
// number is a plain decimal (digits, optional fraction and exponent; no sign, hex, inf or nan),
// and the result must be finite and at most `max` bytes. Fractions of a byte are dropped.
// Also: parse_finite, for plain numbers (thresholds, percentages) under the same rules.
// Pure functions; thread-safe.
#include <cstdint>
#include <string>
#include <string_view>

namespace collie {

// The largest size any collie command accepts by default: 1 TiB.
inline constexpr int64_t kMaxByteSize = int64_t{1} << 40;

// Throws InvalidArgument, one line: "WHAT 'TEXT' is not a size (use e.g. 8, 64K, 4M, 1G)" or
// "WHAT 'TEXT' is larger than 1T". `what` names the flag or key ("-b", "checks[0].bytes").
int64_t parse_byte_size(std::string_view text, std::string_view what,
                        int64_t max = kMaxByteSize);

// A finite decimal number in [lo, hi]. Throws InvalidArgument: "WHAT 'TEXT' is not a number in
// [LO, HI]".
double parse_finite(std::string_view text, std::string_view what, double lo, double hi);

// Throws InvalidArgument unless lo <= v <= hi (NaN and infinities fail): "WHAT V is not in ...".
double check_finite(double v, std::string_view what, double lo, double hi);

}  // namespace collie
