#include "core/size.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"

namespace collie {
namespace {

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

TEST(ByteSize, RejectsWhatIsNotAFiniteSizeInRange) {
  for (const char* bad : {"", "nan", "inf", "-1", "+1", "0x10", " 8", "8 ", "4X", "K", "1e",
                          "1e+", ".", "1..2", "4KB", "NaNK"}) {
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
