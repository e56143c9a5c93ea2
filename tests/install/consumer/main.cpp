// Uses the installed headers and library: an in-process store, the dtype/reduce helpers, and
// collie's exception and store types across the library boundary (exported typeinfo: a catch
// and a dynamic_cast in this program match what libcollie.so throws and creates).
#include <chrono>
#include <cstdio>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/reduce_kernel.h"
#include "store/hash_store.h"
#include "store/prefix_store.h"

int main() {
  collie::HashStore store;
  store.set("greeting", "hello");
  std::vector<int> a = {1, 2, 3}, b = {10, 20, 30};
  collie::reduce_into(a.data(), b.data(), a.size(), collie::DType::Int32, collie::ReduceOp::Sum);
  bool ok = store.get_string("greeting") == "hello" && a[2] == 33 &&
            collie::dtype_name(collie::DType::BFloat16) == "bfloat16";
  // A StoreError thrown inside the library is caught here as collie::Error.
  bool caught = false;
  try {
    store.wait({"never-set"}, std::chrono::milliseconds(10));
  } catch (const collie::Error&) {
    caught = true;
  }
  auto clone = store.clone();
  collie::PrefixStore prefixed("p", clone);
  prefixed.set("k", "v");
  ok = ok && caught && dynamic_cast<collie::HashStore*>(clone.get()) != nullptr &&
       store.get_string("p/k") == "v";
  collie::log(collie::LogLevel::Off, "never printed {}", 1);
  std::printf("consumer %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
