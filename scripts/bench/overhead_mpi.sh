#!/usr/bin/env bash
# Where collie's per-op time over raw Open MPI goes (scripts/bench/overhead_mpi.cpp): raw
# MPI_Allreduce / MPI_Alltoall, the same raw call under collie's per-op bookkeeping (+trace), the
# MPI backend alone (bare) and the whole stack collie perf runs (stack), in the same mpirun.
# Usage: scripts/bench/overhead_mpi.sh [BUILD_DIR=build] [NP=2] [MAX_BYTES=16777216] [ROUNDS=10]
#        [--controls]  (overhead_mpi.cpp: two controls on the raw call replace +trace and bare)
# Per size: p50 and p90 of per-op samples (max over ranks), interleaved rounds; st/r = stack /
# raw, tr-raw and st-raw the added microseconds; then, from 64 KiB, the stack's mean and worst op
# against raw's (the same samples, so both sides share one Open MPI spell). For the collie perf
# CLI against a raw loop, see overhead.sh BACKEND=mpi.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
np=${2:-2}
max_bytes=${3:-16777216}
trials=${4:-10}
[[ -z ${5:-} || ${5} == --controls ]] ||
  { echo "overhead_mpi.sh: unknown fifth argument '${5:0:40}' (only --controls)" >&2; exit 2; }
# A CMake target (needs the in-tree library's internals, which libcollie.so does not export).
cmake --build "$build" --target overhead_mpi >/dev/null ||
  { echo "cannot build overhead_mpi in $build: configure with the MPI backend (scripts/build.sh)" >&2; exit 2; }
bin=$build/scripts/bench/overhead_mpi
exec mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" "$bin" "$max_bytes" "$trials" ${5:+"$5"}
