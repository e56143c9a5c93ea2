#!/usr/bin/env bash
# Overhead of the collie MPI backend vs raw Open MPI loops in the same mpirun.
# Usage: scripts/bench/overhead_mpi.sh [BUILD_DIR=build] [NP=2] [MAX_BYTES=16777216] [ROUNDS=10]
# Per size: p50 and p90 of per-op samples (max over ranks) for the blocking raw call (raw), the
# non-blocking raw call + MPI_Wait the backend is built on (iraw) and collie's ProcessGroup call
# (col), in interleaved rounds; c/r = collie / raw. Targets (issue 16): p50 <= 1.05 x raw and
# p90 <= 1.10 x raw at every size.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
np=${2:-2}
max_bytes=${3:-16777216}
trials=${4:-10}
# A CMake target (needs the in-tree library's internals, which libcollie.so does not export).
cmake --build "$build" --target overhead_mpi >/dev/null ||
  { echo "cannot build overhead_mpi in $build: configure with the MPI backend (scripts/build.sh)" >&2; exit 2; }
bin=$build/scripts/bench/overhead_mpi
exec mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" "$bin" "$max_bytes" "$trials"
