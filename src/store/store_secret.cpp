#include "store/store_secret.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace collie {

std::string new_store_secret() {
  unsigned char raw[32];
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw StoreError(
        fmt::format("cannot create a store secret: open /dev/urandom: {}", std::strerror(errno)));
  }
  size_t got = 0;
  while (got < sizeof(raw)) {
    const ssize_t n = read(fd, raw + got, sizeof(raw) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      close(fd);
      throw StoreError(
          fmt::format("cannot create a store secret: read /dev/urandom: {}", std::strerror(err)));
    }
    got += static_cast<size_t>(n);
  }
  close(fd);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * sizeof(raw));
  for (unsigned char b : raw) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

std::string store_secret_from_env() {
  const char* v = std::getenv(kStoreSecretEnv);
  return v ? std::string(v) : std::string();
}

bool constant_time_equal(std::string_view expected, std::string_view given) {
  volatile unsigned char diff = expected.size() == given.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff = diff | (static_cast<unsigned char>(expected[i]) ^ g);
  }
  return diff == 0;
}

}  // namespace collie
