// Uses the installed headers and library: an in-process store and the dtype/reduce helpers.
#include <cstdio>
#include <vector>

#include "core/dtype.h"
#include "core/reduce_kernel.h"
#include "store/hash_store.h"

int main() {
  collie::HashStore store;
  store.set("greeting", "hello");
  std::vector<int> a = {1, 2, 3}, b = {10, 20, 30};
  collie::reduce_into(a.data(), b.data(), a.size(), collie::DType::Int32, collie::ReduceOp::Sum);
  const bool ok = store.get_string("greeting") == "hello" && a[2] == 33 &&
                  collie::dtype_name(collie::DType::BFloat16) == "bfloat16";
  std::printf("consumer %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
