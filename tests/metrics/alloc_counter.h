#pragma once
// Counts the heap allocations (global operator new) the current thread makes while an
// AllocationCounter is alive. Linking alloc_counter.cpp replaces the program's operator new.
namespace collie::testing {

class AllocationCounter {
 public:
  AllocationCounter();
  ~AllocationCounter();
  int count() const;
};

}  // namespace collie::testing
