#!/usr/bin/env bash
# Per-op all_reduce time on Gloo with COLLIE_DEBUG=OFF / INFO / DETAIL / DETAIL sampled (every
# 16th op) at 8 B, 64 KiB and 16 MiB, as ratios over the raw backend in the same run.
# Usage: scripts/bench/detail_overhead.sh [BUILD_DIR] [REPS]
set -euo pipefail
build=${1:-build}
reps=${2:-3}
bin="$build/tests/debug/collie_detail_overhead_bench"
if [[ ! -x "$bin" ]]; then
  echo "detail_overhead.sh: $bin not found; build first (cmake --build $build)" >&2
  exit 2
fi
# The tracing cost alone first, in a process of its own (the gloo runs fork before any thread).
"$bin" "$reps" --tracing-only
exec "$bin" "$reps"
