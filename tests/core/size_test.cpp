#include "core/size.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/printable.h"

namespace collie {
namespace {

// Every size label a report writes is read back by the one size parser (--min-size, spec keys).
TEST(SizeLabel, ParseByteSizeReadsEveryLabelBack) {
  for (int64_t b : {int64_t{0}, int64_t{8}, int64_t{1000}, int64_t{1024}, int64_t{1536},
                    int64_t{64} << 10, int64_t{3} << 19, int64_t{1} << 30, kMaxByteSize}) {
    EXPECT_EQ(parse_byte_size(size_label(b), "--min-size"), b) << size_label(b);
  }
  EXPECT_EQ(size_label(1536), "1.5K");
  EXPECT_EQ(size_label(kMaxByteSize), "1T");
}

TEST(MemoryLabel, KibBelowOneMibThenMib) {
  EXPECT_EQ(memory_label(0), "0.0 KiB");
  EXPECT_EQ(memory_label(1536), "1.5 KiB");
  EXPECT_EQ(memory_label((int64_t{1} << 20) - 1024), "1023.0 KiB");
  EXPECT_EQ(memory_label(int64_t{1} << 20), "1.0 MiB");
  EXPECT_EQ(memory_label(int64_t{1} << 30), "1024.0 MiB");
  EXPECT_EQ(memory_label(-1), "?");
}

TEST(ByteSize, UnitsAndFractions) {
  EXPECT_EQ(parse_byte_size("8", "-b"), 8);
  EXPECT_EQ(parse_byte_size("0", "-b"), 0);
  EXPECT_EQ(parse_byte_size("64K", "-b"), 64 * 1024);
  EXPECT_EQ(parse_byte_size("64k", "-b"), 64 * 1024);
  EXPECT_EQ(parse_byte_size("4MiB", "-b"), 4 << 20);
  EXPECT_EQ(parse_byte_size("1.5M", "-b"), 3 << 19);
  EXPECT_EQ(parse_byte_size("2G", "-b"), int64_t{2} << 30);
  EXPECT_EQ(parse_byte_size("1e3", "-b"), 1000);
  EXPECT_EQ(parse_byte_size("1024G", "-b"), kMaxByteSize);
}

// Every spelling nccl-tests users write for -b/-e: a bare number or B, then K/M/G (and T, which
// size_label writes for 1 TiB) alone, with B or with iB, in either case; all 1024-based.
TEST(ByteSize, EverySpellingOfAUnit) {
  EXPECT_EQ(parse_byte_size("8B", "-b"), 8);
  EXPECT_EQ(parse_byte_size("8b", "-b"), 8);
  for (const char* k : {"64K", "64k", "64KB", "64kB", "64kb", "64KiB", "64kib", "64KIB"})
    EXPECT_EQ(parse_byte_size(k, "-b"), 64 * 1024) << k;
  for (const char* m : {"1M", "1m", "1MB", "1MiB", "1mib"})
    EXPECT_EQ(parse_byte_size(m, "-e"), 1 << 20) << m;
  for (const char* g : {"1G", "1g", "1GB", "1GiB"})
    EXPECT_EQ(parse_byte_size(g, "-e"), 1 << 30) << g;
  for (const char* t : {"1T", "1t", "1TB", "1TiB"})
    EXPECT_EQ(parse_byte_size(t, "-e"), kMaxByteSize) << t;
  EXPECT_EQ(parse_byte_size("0.5KiB", "-b"), 512);
  EXPECT_EQ(parse_byte_size("1.5b", "-b"), 1);  // fractions of a byte are dropped
}

TEST(ByteSize, OverflowNegativeAndGarbageAreOneLineNamingTheField) {
  auto message = [](const char* text, const char* what) -> std::string {
    try {
      parse_byte_size(text, what);
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "(accepted)";
  };
  // Overflow: beyond the limit, beyond int64 and beyond a double.
  EXPECT_EQ(message("2T", "-e"), "-e '2T' is larger than 1099511627776 bytes");
  EXPECT_EQ(message("99999999999999999999999", "-e"),
            "-e '99999999999999999999999' is larger than 1099511627776 bytes");
  EXPECT_EQ(message("1e400", "-e"), "-e '1e400' is not a size (use e.g. 8, 64K, 4M, 1G)");
  EXPECT_EQ(message("9e18K", "max_bytes"), "max_bytes '9e18K' is larger than 1099511627776 bytes");
  // Negative, signed and garbage.
  for (const char* bad :
       {"-64K", "-1",  "-0", "+64K", "64KBB", "64Kb2", "64 K",  "64iB",  "64Ki", "64KiBs",
        "64P",  "64E", "B",  "KiB",  "K8",    "8KK",   "0x40K", "1,024", "64K ", "\t64K"}) {
    const std::string m = message(bad, "checks[0].bytes");
    // Shown printable (a tab is \x09), as core/printable.h's quote() shows bad input.
    EXPECT_EQ(m, std::string("checks[0].bytes '") + printable(bad) +
                     "' is not a size (use e.g. 8, 64K, 4M, 1G)")
        << bad;
    EXPECT_EQ(m.find('\n'), std::string::npos) << bad;
  }
}

TEST(ByteSize, RejectsWhatIsNotAFiniteSizeInRange) {
  for (const char* bad : {"", "nan", "inf", "-1", "+1", "0x10", " 8", "8 ", "4X", "K", "1e", "1e+",
                          ".", "1..2", "4KBB", "NaNK"}) {
    EXPECT_THROW(parse_byte_size(bad, "-b"), InvalidArgument) << bad;
  }
  try {
    parse_byte_size("1e30", "--min-size");
    ADD_FAILURE();
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "--min-size '1e30' is larger than 1099511627776 bytes");
  }
  EXPECT_THROW(parse_byte_size("1025G", "-b"), InvalidArgument);
  EXPECT_THROW(parse_byte_size("9", "-b", 8), InvalidArgument);
  EXPECT_EQ(parse_byte_size("8", "-b", 8), 8);
}

TEST(FiniteNumber, RangeAndNaN) {
  EXPECT_DOUBLE_EQ(parse_finite("5", "--x", 0, 10), 5);
  EXPECT_DOUBLE_EQ(parse_finite("0.25", "--x", 0, 1), 0.25);
  for (const char* bad : {"nan", "inf", "-1", "11", "", "5%"})
    EXPECT_THROW(parse_finite(bad, "--x", 0, 10), InvalidArgument) << bad;
  EXPECT_THROW(check_finite(std::nan(""), "--x", 0, 1), InvalidArgument);
  EXPECT_THROW(check_finite(std::numeric_limits<double>::infinity(), "--x", 0, 1e300),
               InvalidArgument);
  EXPECT_DOUBLE_EQ(check_finite(0.5, "--x", 0, 1), 0.5);
}

}  // namespace
}  // namespace collie
