#!/usr/bin/env bash
# DETAIL's agreement per check at simulated N ranks (threads on loopback, 127.x.y.z addresses):
# per-rank CPU time, frames and bytes per rank, descriptors, critical-path hops, and the fitted
# growth exponent. Targets (issue 38): cpu per check at 16,384 <= 3x at 2; fds <= 2*log2(N).
# Usage: scripts/bench/scale/detail_agreement.sh [BUILD_DIR] [N ...]  (default 2 64 1024 16384)
#        env CHECKS (measured checks per rank, default 20), WARMUP (default 5)
set -euo pipefail
build=${1:-build}
shift || true
bin="$build/scripts/bench/detail_agreement_bench"
if [[ ! -x "$bin" ]]; then
  echo "detail_agreement.sh: $bin not found; build first (cmake --build $build --target detail_agreement_bench)" >&2
  exit 2
fi
# 16,384 ranks hold ~33,000 descriptors over 4 processes and ~16,400 threads.
ulimit -n "$(ulimit -Hn)"
exec "$bin" "$@"
