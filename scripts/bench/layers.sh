#!/usr/bin/env bash
# ns per op of collie's always-on layers (scripts/bench/layers_bench.cpp): the flight recorder,
# the watchdog, the metrics observer and the whole tracing layer, each with and without in the
# same process, rounds interleaved; then (CALLGRIND=1, the default when valgrind is installed)
# the instructions per op each layer adds, counted by callgrind (robust on a loaded machine).
# Usage: scripts/bench/layers.sh [BUILD_DIR=build]   env: ROUNDS=15 SAMPLES=300 CALLGRIND=1
#        CG_OPS=20000 (ops per callgrind run)  BIN=<a collie_layers_bench copied aside> runs that
#        binary instead of building one (before/after: copy the old build's binary first)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
ROUNDS=${ROUNDS:-15} SAMPLES=${SAMPLES:-300} CG_OPS=${CG_OPS:-20000}
CALLGRIND=${CALLGRIND:-$(command -v valgrind >/dev/null && echo 1 || echo 0)}
bin=${BIN:-}
if [[ -z $bin ]]; then
  cmake --build "$build" --target collie_layers_bench >/dev/null ||
    { echo "layers.sh: cannot build collie_layers_bench in $build (scripts/build.sh first)" >&2; exit 2; }
  bin=$build/scripts/bench/collie_layers_bench
fi
echo "# load: $(uptime)"
"$bin" "$ROUNDS" "$SAMPLES"
[[ $CALLGRIND == 1 ]] || exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Instructions inside collie_bench_collect() only (setup and warm-up are not counted).
count() {  # $1 layer, $2 with|without; prints instructions per op
  valgrind --tool=callgrind --collect-atstart=no --toggle-collect=collie_bench_collect \
    --callgrind-out-file="$tmp/cg.out" "$bin" --callgrind "$1" "$2" "$CG_OPS" >/dev/null 2>&1 ||
    { echo "layers.sh: callgrind run of $1 $2 failed" >&2; exit 1; }
  awk -v n="$CG_OPS" '/^(summary|totals):/ { printf "%.0f\n", $2 / n; exit }' "$tmp/cg.out"
}
echo "# instructions per op (valgrind --tool=callgrind, $CG_OPS ops per run)"
printf '%-14s %9s %9s %9s\n' layer "w/o" with added
for layer in recorder watchdog metrics tracing tracing-async trace-unserved async-unserved; do
  a=$(count "$layer" without)
  b=$(count "$layer" with)
  printf '%-14s %9d %9d %9d\n' "$layer" "$a" "$b" $((b - a))
done
