#pragma once
// Untrusted text (names and messages from dumps, stores, remote ranks) made safe to print to a
// terminal or a log line: every C0 control (newline, carriage return, escape, ...), DEL, every
// C1 control (U+0080..U+009F, which terminals may take as CSI or OSC), every Unicode
// bidirectional control (U+200E/F, U+202A..U+202E, U+2066..U+2069, which reorder what is shown)
// and every byte that is not part of valid UTF-8 is written as an ASCII escape (\xNN for bytes
// and C0/C1/DEL, \u{NNNN} for the bidirectional controls); all other text, accented and
// non-Latin letters included, stays as it is. The escapes are themselves printable, so applying
// it twice changes nothing. Pure functions, thread-safe.
#include <cstddef>
#include <string>
#include <string_view>

namespace collie {

std::string printable(std::string_view text);
// The same for a string about to be dropped: returned as it is (no copy) when nothing in it
// needs an escape, the common case.
std::string printable(std::string&& text);
// Resolves a string literal or a named std::string to the copying overload above.
inline std::string printable(const std::string& text) { return printable(std::string_view(text)); }
inline std::string printable(const char* text) { return printable(std::string_view(text)); }

// The same, but '\n' stays: for text whose line structure is ours and whose parts from elsewhere
// went through printable() already.
std::string printable_lines(std::string_view text);

// How an error message shows a piece of bad input (a flag's value, a variable, a token of a
// file): at most about `max_chars` characters of it, made printable and in single quotes.
// Longer input is cut at a character and says how long it was: 'abc...' (60000000 bytes), so one
// bad 60 MB token is one short line, never 60 MB on stderr.
inline constexpr size_t kQuoteChars = 80;
std::string quote(std::string_view text, size_t max_chars = kQuoteChars);

}  // namespace collie
