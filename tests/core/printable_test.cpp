// core/printable.h: untrusted text printed to a terminal can neither run escape sequences, nor
// break the line, nor reorder what is shown; ordinary text, non-Latin included, is unchanged.
#include "core/printable.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>

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

// The overload for a string about to be dropped gives the same text, and keeps the string's own
// buffer when nothing needed an escape (no copy: the dump reader's sizes and dtypes).
TEST(Printable, AStringGivenAwayIsTheSameTextAndKeptWhenPlain) {
  for (const std::string& s : {std::string(40, 'x'), std::string("a\x1b[31mred"), std::string()}) {
    std::string given = s;
    const char* buffer = given.data();
    const std::string out = printable(std::move(given));
    EXPECT_EQ(out, printable(std::string_view(s)));
    if (s == std::string(40, 'x')) {
      EXPECT_EQ(out.data(), buffer) << "a plain string was copied";
    }
  }
}

TEST(Printable, LinesKeepTheirNewlinesOnly) {
  EXPECT_EQ(printable_lines("one\ntwo\x1b[1A\r"), "one\ntwo\\x1b[1A\\x0d");
}

TEST(Quote, ShortInputIsQuotedWholeAndLongInputIsCutAndMeasured) {
  EXPECT_EQ(quote("64Q"), "'64Q'");
  EXPECT_EQ(quote(std::string(80, 'a')), "'" + std::string(80, 'a') + "'");
  // A 60 MB token of a matrix file: one short line that says how long it was.
  const std::string token(60'000'000, '7');
  EXPECT_EQ(quote(token), "'" + std::string(77, '7') + "...' (60000000 bytes)");
  EXPECT_EQ(quote("a\x1b[2Jb"), "'a\\x1b[2Jb'");
}

TEST(Quote, CutsNeitherAnEscapeNorACharacterAndStaysPrintable) {
  // 100 escape bytes: 77 characters hold 19 whole "\xNN" escapes, never a part of one.
  std::string escapes;
  for (int i = 0; i < 19; ++i) escapes += "\\x1b";
  EXPECT_EQ(quote(std::string(100, '\x1b')), fmt::format("'{}...' (100 bytes)", escapes));
  // Two-byte letters are kept whole.
  std::string e;
  for (int i = 0; i < 60; ++i) e += "\xc3\xa9";
  const std::string qe = quote(e);
  EXPECT_EQ(qe.substr(0, 5), "'\xc3\xa9\xc3\xa9");
  EXPECT_NE(qe.find("...' (120 bytes)"), std::string::npos);
  EXPECT_EQ(printable(qe), qe);
  EXPECT_LE(qe.size(), 2 + 80 + std::string(" (120 bytes)").size());
}

}  // namespace
}  // namespace collie
