#include "debug_server/http_request.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace collie::http {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_tchar(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

ParseResult bad(int status, std::string why) { return {status, std::move(why)}; }

}  // namespace

bool Request::has_header(std::string_view name) const {
  const std::string n = lower(name);
  return std::any_of(headers.begin(), headers.end(), [&](const auto& h) { return h.first == n; });
}

std::string Request::get_header_value(std::string_view name) const {
  const std::string n = lower(name);
  for (const auto& [k, v] : headers) {
    if (k == n) return v;
  }
  return "";
}

std::string Request::get_param_value(const std::string& name) const {
  auto it = params.find(name);
  return it == params.end() ? std::string() : it->second;
}

bool percent_decode(std::string_view in, bool plus_is_space, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = hex(in[i + 1]), lo = hex(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out->push_back(' ');
    } else {
      out->push_back(c);
    }
  }
  return true;
}

void parse_params(std::string_view s, std::multimap<std::string, std::string>* out) {
  while (!s.empty()) {
    const size_t amp = s.find('&');
    const std::string_view pair = s.substr(0, amp);
    s = amp == std::string_view::npos ? std::string_view() : s.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string k, v;
    if (!percent_decode(pair.substr(0, eq), true, &k)) continue;
    if (eq != std::string_view::npos && !percent_decode(pair.substr(eq + 1), true, &v)) continue;
    out->emplace(std::move(k), std::move(v));
  }
}

ParseResult parse_head(std::string_view head, size_t max_body, Request* out) {
  if (head.size() > kMaxHeadBytes) {
    return bad(431, "request line and headers exceed " + std::to_string(kMaxHeadBytes) + " bytes");
  }
  const size_t eol = head.find("\r\n");
  const std::string_view line = head.substr(0, eol);
  std::string_view rest = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2);

  // Request line: METHOD SP target SP HTTP/1.x
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
      line.find(' ', sp2 + 1) != std::string_view::npos) {
    return bad(400, "malformed request line");
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (method.empty() || !std::all_of(method.begin(), method.end(), is_tchar)) {
    return bad(400, "malformed method");
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return bad(505, "only HTTP/1.0 and HTTP/1.1 are served");
  }
  if (target.empty() || target.front() != '/') {
    return bad(400, "request target must be a path starting with '/'");
  }
  for (char c : target) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return bad(400, "control or non-ASCII byte in the request target");
  }
  out->method = std::string(method);
  out->target = std::string(target);
  const size_t q = target.find('?');
  if (!percent_decode(target.substr(0, q), false, &out->path)) {
    return bad(400, "malformed percent-escape in the path");
  }
  if (out->path.find('\0') != std::string::npos) return bad(400, "NUL in the path");
  if (q != std::string_view::npos) {
    out->query = std::string(target.substr(q + 1));
    parse_params(out->query, &out->params);
  }

  return parse_fields(rest, max_body, &out->headers, &out->content_length, nullptr);
}

ParseResult parse_fields(std::string_view rest, size_t max_body,
                         std::vector<std::pair<std::string, std::string>>* headers,
                         size_t* content_length, bool* has_length) {
  bool have_length = false;
  while (!rest.empty()) {
    const size_t e = rest.find("\r\n");
    const std::string_view h = rest.substr(0, e);
    rest = e == std::string_view::npos ? std::string_view() : rest.substr(e + 2);
    if (h.empty()) return bad(400, "empty header line inside the header block");
    if (h.front() == ' ' || h.front() == '\t') return bad(400, "obsolete header line folding");
    const size_t colon = h.find(':');
    if (colon == std::string_view::npos || colon == 0) return bad(400, "malformed header line");
    const std::string_view name = h.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), is_tchar)) return bad(400, "malformed header name");
    const std::string_view value = trim(h.substr(colon + 1));
    for (char c : value) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7f) return bad(400, "control byte in a header value");
    }
    if (headers->size() >= kMaxHeaderCount) return bad(431, "too many header fields");
    headers->emplace_back(lower(name), std::string(value));
    const std::string& n = headers->back().first;
    if (n == "transfer-encoding") return bad(501, "chunked or encoded bodies are not read");
    if (n == "content-length") {
      size_t len = 0;
      const char* b = value.data();
      const char* end = value.data() + value.size();
      auto [p, ec] = std::from_chars(b, end, len);
      if (value.empty() || ec != std::errc() || p != end)
        return bad(400, "malformed Content-Length");
      if (have_length && len != *content_length) return bad(400, "conflicting Content-Length");
      if (len > max_body) {
        return bad(413,
                   "body of " + std::to_string(len) + " bytes exceeds " + std::to_string(max_body));
      }
      have_length = true;
      *content_length = len;
    }
  }
  if (has_length != nullptr) *has_length = have_length;
  return {};
}

ParseResult parse_response_head(std::string_view head, size_t max_body, Reply* out) {
  if (head.size() > kMaxHeadBytes) {
    return bad(431, "status line and headers exceed " + std::to_string(kMaxHeadBytes) + " bytes");
  }
  const size_t eol = head.find("\r\n");
  const std::string_view line = head.substr(0, eol);
  const std::string_view rest =
      eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2);
  // Status line: HTTP/1.x SP 3DIGIT SP reason
  if (line.size() < 12 || (line.substr(0, 9) != "HTTP/1.1 " && line.substr(0, 9) != "HTTP/1.0 ") ||
      !std::all_of(line.begin() + 9, line.begin() + 12,
                   [](char c) { return c >= '0' && c <= '9'; }) ||
      (line.size() > 12 && line[12] != ' ')) {
    return bad(400, "malformed status line");
  }
  out->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
  if (out->status < 200) return bad(400, "interim (1xx) responses are not read");
  return parse_fields(rest, max_body, &out->headers, &out->content_length, &out->has_length);
}

const char* reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 421:
      return "Misdirected Request";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Status";
  }
}

}  // namespace collie::http
