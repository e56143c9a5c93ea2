#pragma once
// The cluster fan-out's HTTP client: one GET to an address read from the store, whose other end
// is not trusted (a rank that hangs, or whatever is listening where a planted address points).
// Everything is bounded by the caller: the whole exchange (resolve, connect, request, head and
// body) by one deadline, the head by http::kMaxHeadBytes and kMaxHeaderCount, the body by
// max_body_bytes, and it stops within 50 ms once `cancel` is set (the request it served ended).
// One connection per call ("Connection: close"); no redirects, no chunked bodies.
// Thread safety: reentrant; `cancel` may be set from any thread.
#include <atomic>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "debug_server/http_request.h"

namespace collie::http {

struct GetRequest {
  std::string host;  // a name or an IP literal (no brackets)
  int port = 0;
  std::string target;  // origin-form: /path?query
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::steady_clock::time_point deadline;
  size_t max_body_bytes = 1 << 20;
  const std::atomic<bool>* cancel = nullptr;
};

// The response (status, body). Throws std::runtime_error, one line naming http://host:port/target
// and why: cannot resolve, refused, no answer by the deadline, cancelled, a head or body above
// its limit, a malformed or truncated response.
Reply get(const GetRequest& req);

}  // namespace collie::http
