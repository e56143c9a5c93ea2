#pragma once
// The per-job store secret (issue 17): the TcpStore server requires it as the first message on
// every connection when one is configured. Launchers create it (new_store_secret) and hand it to
// the ranks in the environment variable COLLIE_STORE_SECRET. Stateless and thread-safe.
#include <string>
#include <string_view>

namespace collie {

inline constexpr const char* kStoreSecretEnv = "COLLIE_STORE_SECRET";
// Longest secret a server accepts (the handshake frame is bounded before authentication).
inline constexpr size_t kMaxStoreSecretBytes = 1024;

// 32 random bytes from /dev/urandom as 64 lowercase hex characters. Throws StoreError when
// /dev/urandom cannot be read (never falls back to a weaker source).
std::string new_store_secret();

// The secret from COLLIE_STORE_SECRET, or "" when unset.
std::string store_secret_from_env();

// Equality whose running time depends only on expected.size(), not on where the inputs differ.
bool constant_time_equal(std::string_view expected, std::string_view given);

}  // namespace collie
