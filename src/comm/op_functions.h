#pragma once
// OpFunctions: a backend's one function per op (backends/<name>/<name>_collectives.cpp), named,
// so every backend picks the function for an OpCall the same way (issue_op).
//   constexpr OpFunctions<MpiIssued, MpiOpArgs> kOps{.send = send, ..., .barrier = barrier};
//   return issue_op(kOps, call.type, args);
// REQUIRES: every member set. Thread-safe: a table of function pointers.
#include "comm/op.h"
#include "core/error.h"

namespace collie {

template <typename Result, typename Args>
struct OpFunctions {
  using Fn = Result (*)(const Args&);
  Fn send, recv, broadcast, all_reduce, reduce, all_gather, gather, scatter, reduce_scatter,
      all_to_all, barrier;
};

template <typename Result, typename Args>
Result issue_op(const OpFunctions<Result, Args>& f, OpType type, const Args& args) {
  switch (type) {
    case OpType::Send:
      return f.send(args);
    case OpType::Recv:
      return f.recv(args);
    case OpType::Broadcast:
      return f.broadcast(args);
    case OpType::AllReduce:
      return f.all_reduce(args);
    case OpType::Reduce:
      return f.reduce(args);
    case OpType::AllGather:
      return f.all_gather(args);
    case OpType::Gather:
      return f.gather(args);
    case OpType::Scatter:
      return f.scatter(args);
    case OpType::ReduceScatter:
      return f.reduce_scatter(args);
    case OpType::AllToAll:
      return f.all_to_all(args);
    case OpType::Barrier:
      return f.barrier(args);
  }
  throw BackendError("op type " + std::to_string(static_cast<int>(type)) + " has no function");
}

}  // namespace collie
