#pragma once
// Process exit statuses shared by the `collie` command and by the library code that must end a
// process itself (the MPI backend's abort on an expired deadline, perf's watchdog). One
// definition, so a status means the same thing whichever part of collie exits.
namespace collie {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the thing tested failed (wrong data, regression, ...)
inline constexpr int kExitUsage = 2;    // bad flags or unusable input
inline constexpr int kExitTimeout = 3;  // a deadline expired
inline constexpr int kExitRuntime = 4;  // backend / network / store error
inline constexpr int kExitWarn = 5;     // acceptance passed with warnings (probes/verdict.h)
// The evidence could not decide (report compare: a row whose change may be run-to-run noise;
// accept: a check nothing could separate). Neither a pass nor a failure: more runs decide.
inline constexpr int kExitInconclusive = 6;

}  // namespace collie
