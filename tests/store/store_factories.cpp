#include "store_factories.h"

#include "store/hash_store.h"
#include "store/prefix_store.h"

namespace collie {

std::vector<StoreFactory> all_store_factories() {
  std::vector<StoreFactory> out;
  out.push_back({"HashStore", [] {
                   auto f = std::make_unique<StoreFixture>();
                   auto s = std::make_shared<HashStore>();
                   f->primary = s;
                   f->connect = [s] { return s; };
                   return f;
                 }});
  out.push_back({"PrefixStore", [] {
                   auto f = std::make_unique<StoreFixture>();
                   auto base = std::make_shared<HashStore>();
                   f->primary = std::make_shared<PrefixStore>("pfx", base);
                   f->connect = [base] { return std::make_shared<PrefixStore>("pfx", base); };
                   return f;
                 }});
  return out;
}

}  // namespace collie
