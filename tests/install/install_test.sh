#!/usr/bin/env bash
# Installs the built tree into a temporary prefix, then configures, builds and runs a separate
# CMake project that uses find_package(collie): every installed header compiled on its own, a
# store/dtype program and a 2-rank init_process_group + all_reduce job. Also checks that the
# library exports no internals and that a missing dependency fails find_package(collie) by name.
# Prints "consumer ok" then "ranks ok". Args: SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$1" build="$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -f "$tmp/prefix/lib/cmake/collie/collieConfig.cmake" || test -f "$tmp/prefix/lib/x86_64-linux-gnu/cmake/collie/collieConfig.cmake"
# Only the public API is exported (COLLIE_API, src/core/export.h): no module internals, no
# symbols of the third-party libraries linked into it.
lib=$(find "$tmp/prefix" -name 'libcollie.so.*.*' | head -1)
exported=$(nm -D --defined-only "$lib" | c++filt)
internal=$(grep -E 'collie::(perf|probes|reports|http|mpi|nccl|gloo|launch|stack)::|collie::gloo_|gloo::|nlohmann::|collie::(FlightRecorder|Watchdog|TracingProcessGroup|ProcessGroupGloo|DesyncCheckingProcessGroup)\b' <<<"$exported" || true)
if [ -n "$internal" ]; then
  echo "libcollie.so exports internals:"; head -20 <<<"$internal"; exit 1
fi
echo "libcollie.so exports $(wc -l <<<"$exported") symbols"
# A dependency find_dependency() cannot find fails find_package(collie), naming it: here fmt,
# hidden behind a package config that reports it missing.
mkdir -p "$tmp/nofmt-pkg"
echo 'set(fmt_FOUND FALSE)' >"$tmp/nofmt-pkg/fmt-config.cmake"
if out=$(cmake -S "$src/tests/install/consumer" -B "$tmp/nofmt" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
           -Dfmt_DIR="$tmp/nofmt-pkg" 2>&1); then
  echo "find_package(collie) succeeded without fmt"; exit 1
fi
# (find_package(collie REQUIRED) makes the find_dependency REQUIRED: CMake stops at fmt.)
{ grep -q 'package "fmt"' <<<"$out" && grep -q "collieConfig.cmake" <<<"$out"; } ||
  { echo "find_package(collie) without fmt did not name it:"; echo "$out"; exit 1; }
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" -j2 >/dev/null
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
