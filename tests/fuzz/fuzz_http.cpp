// libFuzzer target: the debug server's HTTP parsing (debug_server/http_request.h): requests,
// everything a hostile client controls before a handler runs, and responses, everything a
// planted address controls when the cluster fan-out's client reads it. The input is split the
// way both split a connection's bytes (head up to CRLFCRLF, then the body) and parsed as each;
// the parsers must never crash, hang or accept something out of their limits.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "debug_server/http_request.h"

using collie::http::Request;

namespace {
void check(bool ok) {
  if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t end = in.find("\r\n\r\n");
  const std::string_view head = in.substr(0, end);
  constexpr size_t kMaxBody = 64 * 1024;
  Request req;
  const auto r = collie::http::parse_head(head, kMaxBody, &req);
  if (r.status == 0) {
    // Whatever it accepted is servable: a method token, an origin-form path, a bounded body.
    check(!req.method.empty());
    check(!req.target.empty() && req.target.front() == '/');
    check(req.content_length <= kMaxBody);
    check(req.path.find('\0') == std::string::npos);
    check(head.size() <= collie::http::kMaxHeadBytes);
    check(req.headers.size() <= collie::http::kMaxHeaderCount);
    for (const auto& [name, value] : req.headers) {
      check(!name.empty());
      for (char c : name) check(!(c >= 'A' && c <= 'Z'));
    }
    if (end != std::string_view::npos) {
      std::string_view body = in.substr(end + 4);
      if (body.size() > req.content_length) body = body.substr(0, req.content_length);
      collie::http::parse_params(body, &req.params);
    }
    (void)req.get_header_value("host");
  } else {
    check(r.status >= 400 && r.status < 600);
    check(!r.error.empty());
  }
  collie::http::Reply reply;
  const auto rr = collie::http::parse_response_head(head, kMaxBody, &reply);
  if (rr.status == 0) {
    check(reply.status >= 200 && reply.status <= 999);
    check(head.rfind("HTTP/1.", 0) == 0);
    check(reply.headers.size() <= collie::http::kMaxHeaderCount);
    check(!reply.has_length || reply.content_length <= kMaxBody);
    for (const auto& [name, value] : reply.headers) check(name != "transfer-encoding");
  } else {
    check(!rr.error.empty());
  }
  std::string decoded;
  if (collie::http::percent_decode(in.substr(0, 256), true, &decoded)) {
    check(decoded.size() <= std::min<size_t>(in.size(), 256));
  }
  return 0;
}
