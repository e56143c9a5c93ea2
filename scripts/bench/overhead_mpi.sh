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
[[ -f $build/libcollie.so ]] || { echo "no $build/libcollie.so; build first (scripts/build.sh)" >&2; exit 2; }
bin=$build/bench/overhead_mpi
mkdir -p "$build/bench"
if [[ ! -x $bin || $bin -ot $root/scripts/bench/overhead_mpi.cpp || $bin -ot $build/libcollie.so ]]; then
  mpicxx -O2 -std=c++20 -DOMPI_SKIP_MPICXX -I"$root/src" -I"$root" \
    "$root/scripts/bench/overhead_mpi.cpp" -o "$bin" -L"$build" -Wl,-rpath,"$build" -lcollie -lfmt
fi
exec mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" "$bin" "$max_bytes" "$trials"
