#pragma once
// What live tests read from a collie job's log.
#include <regex>
#include <string>

#include "support/child_process.h"

namespace collie::testing {

// Rank 0's debug server URL from the job's "debug server for rank 0 at http://127.0.0.1:PORT"
// log line (COLLIE_LOG_LEVEL=info); "" if it does not appear within 30 s.
inline std::string rank0_debug_url(ChildProcess& job) {
  const std::regex re("debug server for rank 0 at (http://127\\.0\\.0\\.1:[0-9]+)");
  std::smatch m;
  std::string url;
  job.wait_for_err(
      [&](const std::string& err) {
        if (!std::regex_search(err, m, re)) return false;
        url = m[1];
        return true;
      },
      std::chrono::seconds(30));
  return url;
}

}  // namespace collie::testing
