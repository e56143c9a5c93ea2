#pragma once
// The backend conformance suite: cases written once against the ProcessGroup API, run by one
// driver per backend (gloo_conformance_test.cpp over run_ranks, mpi_conformance_test.cpp under
// mpirun, the nccl driver in tests/backends/nccl). Every case checks what the backend *declares*
// (ProcessGroup::capabilities() on the device of pg.device_runtime()) against the oracle
// (tests/support/oracle.h):
//   - one case per op type: every declared dtype x reduce op, for each count in Settings, at two
//     roots where the op has one, in place and out of place where the API has both, alternating
//     synchronous and async_op execution; results, untouched inputs and untouched neighbours
//     compared byte for byte with the oracle;
//   - "undeclared": every op x dtype x reduce op x device the table does not declare throws
//     InvalidArgument (ProcessGroup::submit's documented error) and leaves the buffers as they
//     were; afterwards the group still reduces correctly (nothing was sent).
// Buffers come from pg.device_runtime(), so the same cases run on host and CUDA groups.
// Every rank of the group must run the same case with the same settings.
#include <functional>
#include <string>
#include <vector>

#include "comm/process_group.h"

namespace collie::testing::conformance {

struct Settings {
  std::vector<size_t> counts{1, 7, 1000};  // elements per rank (per block)
  Millis timeout{20000};                   // every wait
};

struct Outcome {
  int ran = 0;                        // combinations run
  int declared = 0;                   // combinations the capability table asks for (ran must match)
  std::vector<std::string> failures;  // at most the first 20
  int failed = 0;                     // all of them
  void fail(std::string what);
  bool ok() const { return failed == 0 && ran == declared; }
  // "ran 120 of 120 combinations, 2 failed: <first failures>".
  std::string summary() const;
};

struct Case {
  std::string name;  // "all_reduce", ..., "undeclared"
  std::function<Outcome(ProcessGroup&, const Settings&)> run;
};

// One case per op type (in kAllOpTypes order), then "undeclared".
const std::vector<Case>& cases();

// A case's checks for one op type.
Outcome check_declared(ProcessGroup& pg, OpType t, const Settings& s);
Outcome check_undeclared(ProcessGroup& pg, const Settings& s);

}  // namespace collie::testing::conformance
