#!/usr/bin/env bash
# Installs the built tree into a temporary prefix, then configures, builds and runs a separate
# CMake project that uses find_package(collie): a store/dtype program and a 2-rank
# init_process_group + all_reduce job. Prints "consumer ok" then "ranks ok". Args: SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$1" build="$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -f "$tmp/prefix/lib/cmake/collie/collieConfig.cmake" || test -f "$tmp/prefix/lib/x86_64-linux-gnu/cmake/collie/collieConfig.cmake"
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
export LD_LIBRARY_PATH="$tmp/prefix/lib:$tmp/prefix/lib/x86_64-linux-gnu"
"$tmp/consumer/consumer"
# A real 2-rank job through the installed library: init_process_group + all_reduce.
pids=()
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 COLLIE_TIMEOUT=60s timeout 120 "$tmp/consumer/ranks" "$tmp/store" \
    >"$tmp/rank$r.log" 2>&1 &
  pids+=($!)
done
for r in 0 1; do
  if ! wait "${pids[$r]}"; then
    echo "rank $r failed:"; cat "$tmp/rank$r.log"; exit 1
  fi
  grep -q "all_reduce ok" "$tmp/rank$r.log" || { cat "$tmp/rank$r.log"; exit 1; }
done
echo "ranks ok"
