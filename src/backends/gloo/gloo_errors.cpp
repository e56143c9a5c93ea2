#include "backends/gloo/gloo_errors.h"

#include <fmt/format.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>

#include "core/error.h"
#include "core/log.h"

namespace collie {
namespace {

std::string prefix(const GlooErrorContext& c) {
  std::string peer = c.peer >= 0 ? fmt::format(" with peer {}", c.peer) : std::string();
  return fmt::format("[Rank {}] gloo {} #{}{} ({})", c.rank, op_name(c.op), c.seq, peer, c.group);
}

}  // namespace

bool looks_like_gloo_timeout(const std::string& what) {
  return what.find("imed out") != std::string::npos || what.find("imeout") != std::string::npos;
}

std::exception_ptr translate_gloo_error(const GlooErrorContext& c, std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error&) {
    return error;
  } catch (const gloo::IoException& e) {
    const std::string what = e.what();
    if (looks_like_gloo_timeout(what)) {
      // Gloo's own text ("[./gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 3000ms
      // for recv operation to complete") repeats the deadline with a source path: kept for
      // COLLIE_LOG_LEVEL=INFO, not in the message a user reads.
      log(LogLevel::Info, "{}: gloo said: {}", prefix(c), what);
      return std::make_exception_ptr(TimeoutError(fmt::format(
          "{} did not complete within {} ms; some rank may not have called it or is stuck "
          "(set COLLIE_DEBUG=DETAIL, or run `collie analyze` on the flight-recorder dumps)",
          prefix(c), c.timeout.count())));
    }
    return std::make_exception_ptr(NetworkError(fmt::format(
        "{} lost a connection: {}; a peer process probably exited or was killed (check the "
        "other ranks' logs); this group cannot be used any more",
        prefix(c), what)));
  } catch (const gloo::EnforceNotMet& e) {
    return std::make_exception_ptr(BackendError(fmt::format(
        "{} failed inside Gloo: {}; check that every rank called it with the same sizes", prefix(c),
        e.what())));
  } catch (const std::exception& e) {
    return std::make_exception_ptr(BackendError(
        fmt::format("{} failed: {}; check the other ranks' logs", prefix(c), e.what())));
  }
}

}  // namespace collie
