#include "backends/gloo/gloo_prepared.h"

namespace collie {

void PreparedOps::clear() {
  index_.clear();
  lru_.clear();
}

}  // namespace collie
