#pragma once
// The one parser of byte sizes written by people (perf's -b/-e/-i, probe --bytes, accept specs,
// report --min-size): "8", "8B", "1.5M", "64K", "64KB", "64KiB", "4MiB", "1G", "1T". Units are
// binary as in nccl-tests (K = KB = KiB = 1024, then M, G, T), the unit letter and a trailing
// "B"/"iB" in either case ("64k", "64kb" as nccl-tests takes them); the number is a plain decimal
// (digits, optional fraction and exponent; no sign, hex, inf or nan), and the result must be
// finite and at most `max` bytes. Fractions of a byte are dropped. The writers of sizes live here
// too: size_label writes them the way the parser reads them, memory_label the way collie prints
// memory amounts.
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
int64_t parse_byte_size(std::string_view text, std::string_view what, int64_t max = kMaxByteSize);

// Binary size label as the -b/-e flags take it: 8 → "8", 1024 → "1K", 1572864 → "1.5M" (units up
// to T). parse_byte_size reads every label back.
std::string size_label(int64_t bytes);

// A memory amount with one decimal: below 1 MiB in KiB ("0.0 KiB", "1023.0 KiB"), else in MiB
// ("1.5 MiB", "1024.0 MiB"); "?" for a negative (unknown) amount.
std::string memory_label(int64_t bytes);

// A finite decimal number in [lo, hi]. Throws InvalidArgument: "WHAT 'TEXT' is not a number in
// [LO, HI]".
double parse_finite(std::string_view text, std::string_view what, double lo, double hi);

// Throws InvalidArgument unless lo <= v <= hi (NaN and infinities fail): "WHAT V is not in ...".
double check_finite(double v, std::string_view what, double lo, double hi);

}  // namespace collie
