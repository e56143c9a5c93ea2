// core/printable.h: untrusted text printed to a terminal can neither run escape sequences, nor
// break the line, nor reorder what is shown; ordinary text, non-Latin included, is unchanged.
#include "core/printable.h"

#include <gtest/gtest.h>

#include <string>

namespace collie {
namespace {

TEST(Printable, TerminalControlsBecomeEscapes) {
  // The attack of issue 27: clear the screen, home the cursor, print a fake verdict.
  EXPECT_EQ(printable("pg\x1b[2J\x1b[HNo problem found"), "pg\\x1b[2J\\x1b[HNo problem found");
  EXPECT_EQ(printable("a\nb\rc\td\x7f"), "a\\x0ab\\x0dc\\x09d\\x7f");
  EXPECT_EQ(printable(std::string("nul\0x", 5)), "nul\\x00x");
  // C1 CSI (U+009B) and OSC (U+009D) as UTF-8, which some terminals act on.
  EXPECT_EQ(printable("\xc2\x9b"
                      "31m\xc2\x9d"),
            "\\x9b31m\\x9d");
  // Bidirectional overrides reorder what the reader sees.
  EXPECT_EQ(printable("rank \xe2\x80\xae"
                      "1 kcatta"),
            "rank \\u{202e}1 kcatta");
}

TEST(Printable, BytesThatAreNotUtf8BecomeEscapes) {
  EXPECT_EQ(printable("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable("\xe4\xb8"), "\\xe4\\xb8");           // truncated
}

TEST(Printable, OrdinaryTextIsUnchangedAndEscapingTwiceChangesNothing) {
  for (const std::string s :
       {"gloo:all_reduce", "group \xc3\xa9t\xc3\xa9", "\xe4\xb8\xad\xe6\x96\x87", "a\\x1b", ""}) {
    EXPECT_EQ(printable(s), s);
  }
  const std::string hostile = "x\x1b]0;title\x07\xc2\x9b\xff\n";
  EXPECT_EQ(printable(printable(hostile)), printable(hostile));
}

TEST(Printable, LinesKeepTheirNewlinesOnly) {
  EXPECT_EQ(printable_lines("one\ntwo\x1b[1A\r"), "one\ntwo\\x1b[1A\\x0d");
}

}  // namespace
}  // namespace collie
