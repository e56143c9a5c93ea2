#include "core/output_path.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace collie {

void check_output_file(const std::string& path, std::string_view flag) {
  namespace fs = std::filesystem;
  if (path.empty() || path == "-") return;
  auto fail = [&](const std::string& why) {
    throw InvalidArgument(fmt::format("{} '{}': {}", flag, path, why));
  };
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) fail("is a directory, not a file");
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) fail(fmt::format("directory '{}' does not exist", dir.string()));
  if (fs::exists(p, ec)) {
    if (::access(path.c_str(), W_OK) != 0)
      fail(fmt::format("cannot be written ({})", std::strerror(errno)));
  } else if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    fail(fmt::format("cannot be created in '{}' ({})", dir.string(), std::strerror(errno)));
  }
}

}  // namespace collie
