// The README's C++ snippet with a bug a user makes: rank 1 calls broadcast where the others call
// all_reduce. The DesyncError (COLLIE_DEBUG=DETAIL) is not caught, as in a program that does not
// expect one: each rank must print the mismatch once (first_hour_test.cpp).
#include <vector>

#include "stack/init.h"

int main() {
  auto pg = collie::init_process_group();  // gloo, env:// (collie launch sets it)
  std::vector<float> x(1024, 1.0f);
  const auto v = collie::TensorView::cpu(x.data(), x.size(), collie::DType::Float32);
  if (pg->rank() == 1) {
    pg->broadcast(v)->wait();
  } else {
    pg->all_reduce(v)->wait();
  }
  return 0;
}
