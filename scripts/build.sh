#!/usr/bin/env bash
# Configures and builds collie into ${COLLIE_BUILD_DIR:-build} (Release unless BUILD_TYPE says).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${COLLIE_BUILD_DIR:-build}"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
# ccache (optional, not installed by bootstrap) makes rebuilds in other worktrees cheap.
command -v ccache >/dev/null && gen+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" "${gen[@]}" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" "$@"
fi
start=$(date +%s)
cmake --build "$BUILD_DIR" -j"$(nproc)"
echo "build: done in $(( $(date +%s) - start )) s ($BUILD_DIR)"
