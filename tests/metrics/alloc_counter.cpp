#include "metrics/alloc_counter.h"

#include <cstdlib>
#include <new>

namespace {
thread_local bool g_counting = false;
thread_local int g_allocs = 0;
}  // namespace

void* operator new(std::size_t n) {
  if (g_counting) ++g_allocs;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace collie::testing {

AllocationCounter::AllocationCounter() {
  g_allocs = 0;
  g_counting = true;
}
AllocationCounter::~AllocationCounter() { g_counting = false; }
int AllocationCounter::count() const { return g_allocs; }

}  // namespace collie::testing
