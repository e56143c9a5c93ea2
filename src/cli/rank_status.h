#pragma once
// Every rank of a probe or accept run exits with rank 0's status, so whichever launcher started
// the ranks (mpirun, srun, collie launch) reports the verdict rank 0 printed.
#include <string>

namespace collie::probes {
struct ProbeContext;
}

namespace collie::cli {

// Rank 0 publishes `rank0_status` on the context's store and waits (up to twice the context's
// step timeout) until every other rank has read it: the store may live in rank 0's process, so
// rank 0 must not exit before the others have their status. Other ranks wait as long for it and
// return it; one that cannot learn it (rank 0 gone: it crashed, or ended the run itself, as
// accept does with REJECTED when a step hangs) says so on stderr and returns kExitFailure: the run
// did not pass, and rank 0's own status says why.
// REQUIRES: every rank of the context calls it once per run, after the run's last collective;
// `rank0_status` is only read on rank 0. Blocking; not thread safe (one call per process).
int share_rank0_status(probes::ProbeContext& ctx, int rank0_status);

}  // namespace collie::cli
