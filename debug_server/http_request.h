#pragma once
// HTTP/1.x message parsing, kept pure so it can be fuzzed (tests/fuzz/fuzz_http.cpp): the
// requests a hostile client sends the debug server, and the responses the cluster fan-out's
// client (http_client.h) reads from addresses found in the store. Only what those need: a
// request line with an origin-form target or a status line, header fields, a Content-Length
// body (no chunked bodies), query parameters (and urlencoded form bodies) percent-decoded.
// Value types; not thread-safe to mutate, safe to read from several threads.
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace collie::http {

inline constexpr size_t kMaxHeadBytes = 16 * 1024;  // request line + headers
inline constexpr size_t kMaxHeaderCount = 100;

struct Request {
  std::string method;
  std::string target;  // as sent: path[?query]
  std::string path;    // percent-decoded
  std::string query;   // raw, after '?'
  std::multimap<std::string, std::string> params;
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased, values trimmed
  std::string body;
  size_t content_length = 0;

  bool has_header(std::string_view name) const;
  // The first value of header `name` (case-insensitive), or "".
  std::string get_header_value(std::string_view name) const;
  bool has_param(const std::string& name) const { return params.count(name) > 0; }
  std::string get_param_value(const std::string& name) const;
};

// Outcome of parse_head: status 0 = ok, else the HTTP status to answer (400, 413, 431, 501, 505)
// with `error` saying why.
struct ParseResult {
  int status = 0;
  std::string error;
};

// Parses `head` (everything before the blank line, without the final CRLFCRLF) into `out`.
// max_body bounds Content-Length (413 above it).
ParseResult parse_head(std::string_view head, size_t max_body, Request* out);

// The header fields after the first line of a head (CRLF-separated), at most kMaxHeaderCount,
// names lowercased; a Content-Length (one value, repeated only identically, at most max_body)
// goes to *content_length and *has_length (may be null). Transfer-Encoding is refused (501).
ParseResult parse_fields(std::string_view fields, size_t max_body,
                         std::vector<std::pair<std::string, std::string>>* headers,
                         size_t* content_length, bool* has_length);

struct Reply {
  int status = 0;                                            // 200..999
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased
  bool has_length = false;  // Content-Length given; else the body ends when the peer closes
  size_t content_length = 0;
  std::string body;
};

// Parses a response head (status line and headers, without the final CRLFCRLF): status 0 = ok,
// else why not (malformed, 1xx, Transfer-Encoding, Content-Length above max_body, head above
// kMaxHeadBytes, more than kMaxHeaderCount fields).
ParseResult parse_response_head(std::string_view head, size_t max_body, Reply* out);

// Adds the parameters of an application/x-www-form-urlencoded string (a query or a form body).
void parse_params(std::string_view s, std::multimap<std::string, std::string>* out);

// Percent-decoding ('+' as space when plus_is_space); false on a malformed escape.
bool percent_decode(std::string_view in, bool plus_is_space, std::string* out);

// The reason phrase of a status code ("OK", "Not Found", ...).
const char* reason_phrase(int status);

}  // namespace collie::http
