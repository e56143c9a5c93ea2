#pragma once
// A backend's functions, one per op, in one table the compiler checks: op_table() is consteval,
// so a table that leaves an op out, or lists one twice, does not build. An op the backend does
// not run is listed with nullptr, explicitly; the backend's Capabilities come from the same table
// (capabilities_from), so nothing is advertised that has no function behind it.
//   static constexpr auto kOps = op_table<MpiFn>({{OpType::Send, send}, ..., {OpType::Barrier,
//   barrier}}); return run_op(kOps, call.type, args);
// Thread-safe: tables of function pointers.
#include <array>
#include <cstddef>
#include <string>

#include "comm/capabilities.h"
#include "comm/op.h"
#include "core/error.h"

namespace collie {

template <typename Fn>
struct OpEntry {
  OpType op;
  Fn fn;  // nullptr: the backend does not run this op
};

template <typename Fn>
using OpTable = std::array<Fn, kNumOpTypes>;

// REQUIRES (checked at compile time): every OpType exactly once.
template <typename Fn, size_t N>
consteval OpTable<Fn> op_table(const OpEntry<Fn> (&entries)[N]) {
  OpTable<Fn> t{};
  std::array<bool, kNumOpTypes> listed{};
  for (const OpEntry<Fn>& e : entries) {
    const int i = static_cast<int>(e.op);
    if (listed[i]) throw "op_table: an op is listed twice";
    listed[i] = true;
    t[i] = e.fn;
  }
  for (bool l : listed)
    if (!l) throw "op_table: every OpType needs an entry (its function, or nullptr)";
  return t;
}

// Calls the op's function. Throws BackendError for an op the table has no function for (submit's
// capability check refuses those before a backend sees them).
template <typename Fn, typename... Args>
decltype(auto) run_op(const OpTable<Fn>& t, OpType op, Args&&... args) {
  const Fn fn = t[static_cast<int>(op)];
  if (fn == nullptr)
    throw BackendError("this backend has no function for " + std::string(op_name(op)));
  return fn(std::forward<Args>(args)...);
}

// `each` (device, dtypes, reduce ops) for every op the table has a function for; reduce ops only
// on ops that take one.
template <typename Fn>
Capabilities capabilities_from(std::string backend, const OpTable<Fn>& t, OpCapability each) {
  Capabilities c;
  c.backend = std::move(backend);
  for (OpType op : kAllOpTypes) {
    if (t[static_cast<int>(op)] == nullptr) continue;
    OpCapability& o = c.at(op);
    o = each;
    if (!has_reduce_op(op)) o.reduce_ops = 0;
  }
  return c;
}

}  // namespace collie
