#!/usr/bin/env bash
# collie's Gloo path vs libgloo in the same processes (scripts/bench/gloo_overhead_bench.cpp):
# p50/p90 of per-op samples per mode, interleaved rounds, for 2 and 4 ranks.
# Usage: scripts/bench/gloo_overhead.sh [BUILD_DIR=build] [ROUNDS=6] [ITERS=50]
#        BENCH_ABLATION=1 adds libgloo with its options built per op (collie before issue 31).
set -euo pipefail
build=${1:-build}
rounds=${2:-6}
iters=${3:-50}
bin="$build/scripts/bench/gloo_overhead_bench"
[[ -x $bin ]] || { echo "gloo_overhead.sh: $bin not found; build the tests first (cmake --build $build)" >&2; exit 2; }
for np in 2 4; do
  "$bin" "$rounds" "$np" "$iters"
done
