#pragma once
// Which environment variables hold credentials, for everything that copies the environment
// somewhere others read (the -J results file, the debug server's /v1/config): one rule, so a
// variable hidden in one place is hidden in all. Pure, thread-safe.
#include <string_view>

namespace collie {

// True when the name contains TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL, or ends in _KEY
// (any case): COLLIE_STORE_SECRET, COLLIE_DEBUG_TOKEN, a cluster's DB_PASSWORD, an API_KEY.
bool is_secret_env_name(std::string_view name);

}  // namespace collie
