#include "core/secret_names.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace collie {

bool is_secret_env_name(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  for (std::string_view s : {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"}) {
    if (upper.find(s) != std::string::npos) return true;
  }
  return upper.ends_with("_KEY");
}

}  // namespace collie
