#!/usr/bin/env bash
# Per-op all_reduce time on Gloo for the raw backend and COLLIE_DEBUG=OFF / INFO / DETAIL /
# DETAIL sampled (every 16th op) / DETAIL via the store / DETAIL with a spinning tree at 8 B,
# 64 KiB, 1 MiB and 16 MiB. All modes run in the same processes, interleaved in short blocks; every
# op is timed on its own, and each mode reports p50 and p90 of its samples (DETAIL's targets,
# issue 38: p50 <= 1.15x OFF at 8 B, <= 1.05x from 1 MiB).
# Usage: scripts/bench/detail_overhead.sh [BUILD_DIR] [ROUNDS] [NP]   (defaults 15 rounds, 2 ranks)
set -euo pipefail
build=${1:-build}
rounds=${2:-15}
np=${3:-2}
bin="$build/tests/debug/collie_detail_overhead_bench"
if [[ ! -x "$bin" ]]; then
  echo "detail_overhead.sh: $bin not found; build first (cmake --build $build)" >&2
  exit 2
fi
exec "$bin" "$rounds" "$np"
