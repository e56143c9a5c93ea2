#include "core/atomic_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace collie {

void write_file_atomic(const std::string& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path tmp =
      target.parent_path() / fmt::format(".{}.{}.tmp", target.filename().string(), ::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) {
      throw Error(fmt::format("cannot write {} (check the directory exists and is writable)",
                              tmp.string()));
    }
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    f.flush();
    if (!f) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      throw Error(fmt::format("writing {} failed (disk full?)", tmp.string()));
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw Error(fmt::format("cannot rename {} to {}: {}", tmp.string(), path, ec.message()));
  }
}

}  // namespace collie
