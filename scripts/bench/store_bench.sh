#!/usr/bin/env bash
# TcpStore throughput with 1, 16 and 128 clients on loopback, next to a raw TCP echo.
# Usage: scripts/bench/store_bench.sh [build_dir] [seconds_per_cell] [value_bytes] [clients...]
set -euo pipefail
build=${1:-build}
shift || true
if [[ ! -x "$build/scripts/bench/store_bench" ]]; then
  cmake --build "$build" --target store_bench
fi
exec "$build/scripts/bench/store_bench" "${@:-1.0}"
